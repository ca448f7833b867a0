#!/usr/bin/env python3
"""Receive sd_notify(3) datagrams on a socket path and append each to a log.

Usage: notify-listen.py SOCKET_PATH LOG_FILE
One datagram per record, records separated by a line "--". Runs until killed.
"""
import os
import socket
import sys

path, log = sys.argv[1], sys.argv[2]
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(log, "a", buffering=1) as f:
    while True:
        data = s.recv(65536).decode(errors="replace")
        f.write(data.rstrip("\n") + "\n--\n")
