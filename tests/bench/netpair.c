/* SPDX-License-Identifier: MIT */
/*
 * A request/response pair over loopback: a client process sends 64 bytes, a
 * server process sends them back, over one TCP connection (TCP_NODELAY) or
 * over UDP. The kernel wakes each side from the NET_RX softirq its peer's
 * send runs, in the peer's context: the shape the wake sampler sees only by
 * its softirq wakeups.
 *
 *   netpair [-t tcp|udp] [-s SECONDS] [-w WARMUP_SECONDS] [-n ROUND_TRIPS] [-p]
 *
 * Prints "round_trips_per_sec N", counted after the warm-up (default: half
 * the run). With -n the run ends after that many round trips instead, warm-up
 * included. With -p the two pids are printed first ("pids SERVER CLIENT").
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG_SIZE 64

static double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The server: answers every request with its bytes until the client goes. */
static int serve(int fd, int type) {
        int one = 1;
        if (type == SOCK_STREAM) {
                int c = accept(fd, NULL, NULL);
                if (c < 0)
                        return 1;
                (void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                fd = c;
        }
        for (;;) {
                char buf[MSG_SIZE];
                struct sockaddr_in peer;
                socklen_t len = sizeof(peer);
                ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &len);
                if (n <= 0)
                        return n == 0 ? 0 : 1;
                if (sendto(fd, buf, (size_t)n, 0, type == SOCK_STREAM ? NULL : &peer,
                           type == SOCK_STREAM ? 0 : len) != n)
                        return 1;
        }
}

int main(int argc, char *argv[]) {
        double seconds = 6, warmup = -1;
        uint64_t round_trips = 0;
        int type = SOCK_STREAM, print_pids = 0, one = 1, c;
        while ((c = getopt(argc, argv, "t:s:w:n:p")) >= 0) {
                if (c == 't' && (strcmp(optarg, "tcp") == 0 || strcmp(optarg, "udp") == 0))
                        type = optarg[0] == 't' ? SOCK_STREAM : SOCK_DGRAM;
                else if (c == 's')
                        seconds = strtod(optarg, NULL);
                else if (c == 'w')
                        warmup = strtod(optarg, NULL);
                else if (c == 'n')
                        round_trips = strtoull(optarg, NULL, 10);
                else if (c == 'p')
                        print_pids = 1;
                else {
                        fprintf(stderr, "usage: netpair [-t tcp|udp] [-s SECONDS] [-w WARMUP] "
                                        "[-n ROUND_TRIPS] [-p]\n");
                        return 2;
                }
        }
        if (round_trips > 0)
                warmup = 0, seconds = 1e9;
        else if (warmup < 0)
                warmup = seconds / 2;
        if (seconds <= 0 || warmup >= seconds) {
                fprintf(stderr, "netpair: need 0 <= warm-up < duration\n");
                return 2;
        }

        struct sockaddr_in addr = { .sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(addr);
        int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
            getsockname(fd, (struct sockaddr *)&addr, &len) < 0 ||
            (type == SOCK_STREAM && listen(fd, 1) < 0)) {
                perror("netpair: server socket");
                return 1;
        }
        pid_t server = fork();
        if (server < 0)
                return 1;
        if (server == 0) {
                /* A UDP server never hears that its client is gone: die with it. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                        _exit(1);
                _exit(serve(fd, type));
        }
        close(fd);

        int s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
                perror("netpair: client socket");
                kill(server, SIGKILL);
                return 1;
        }
        if (type == SOCK_STREAM)
                (void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        /* A datagram lost under load is sent again after a second, not waited for forever. */
        struct timeval timeout = { .tv_sec = 1 };
        if (type == SOCK_DGRAM)
                (void)setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
        unsigned resent = 0;
        if (print_pids) {
                printf("pids %d %d\n", (int)server, (int)getpid());
                fflush(stdout);
        }

        double start = now_sec(), measure_from = start + warmup, end = start + seconds;
        uint64_t counted = 0;
        double t = start, counted_from = start;
        char buf[MSG_SIZE] = "ping";
        for (uint64_t i = 0; t < end && (round_trips == 0 || i < round_trips); i++) {
                ssize_t n = -1;
                for (unsigned tries = 0; n < 0 && tries < 10; tries++) {
                        if (send(s, buf, sizeof(buf), 0) != sizeof(buf))
                                break;
                        n = recv(s, buf, sizeof(buf), MSG_WAITALL);
                        resent += n < 0 && type == SOCK_DGRAM;
                        if (n < 0 && type != SOCK_DGRAM)
                                break;
                }
                if (n != sizeof(buf)) {
                        perror("netpair: round trip");
                        kill(server, SIGKILL);
                        return 1;
                }
                if ((i & 255) == 0)
                        t = now_sec();
                if (t >= measure_from) {
                        if (counted == 0)
                                counted_from = t;
                        counted++;
                }
        }
        double elapsed = now_sec() - counted_from;
        if (type == SOCK_STREAM)
                close(s); /* the server reads 0 and ends */
        else
                kill(server, SIGTERM);
        waitpid(server, NULL, 0);
        if (resent)
                fprintf(stderr, "netpair: %u datagrams sent again after a lost one\n", resent);
        printf("round_trips_per_sec %.0f\n", elapsed > 0 ? counted / elapsed : 0);
        return 0;
}
