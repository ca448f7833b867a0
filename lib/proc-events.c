/* SPDX-License-Identifier: MIT */
/*
 * Process lifecycle from the netlink proc connector, through libnl.
 *
 * Why: placed's model must forget a task the moment it exits (a reused TID is
 * a different task) and must place a new thread of a managed group within a
 * tick, without rescanning /proc every tick. The kernel multicasts fork, exec,
 * exit and comm changes on NETLINK_CONNECTOR group CN_IDX_PROC once a
 * privileged socket has sent PROC_CN_MCAST_LISTEN.
 *
 * How: libnl owns the socket, the subscription messages and the parsing loop
 * (a NL_CB_MSG_IN callback: connector messages are NLMSG_DONE, which libnl
 * would otherwise route to NL_CB_FINISH, not NL_CB_VALID). Receiving is
 * overridden with nl_cb_overwrite_recv() for one reason: libnl's nl_recv()
 * maps ENOBUFS (the socket overflowed, events were dropped) to NLE_NOMEM,
 * indistinguishable from a failed malloc, and the daemon must know about
 * losses to rescan. Losses are also counted exactly from the kernel's per-CPU
 * sequence numbers (cn_msg.seq is a per-CPU counter, proc_event.cpu says
 * which), which catches events the kernel failed to allocate as well.
 *
 * The subscription is acknowledged by a PROC_EVENT_NONE message carrying an
 * errno, multicast to every listener, queued before our send returns. Ours is
 * recognised by the cn_msg.ack we chose (the kernel answers with ack + 1; its
 * seq is the per-CPU event counter, not ours). No acknowledgement at all means
 * the kernel ignored us: it does so for requests from outside the initial PID
 * and user namespaces.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "macro.h"
#include "proc-events.h"

#define PROC_EVENTS_RCVBUF_BYTES (1024 * 1024) /* about a thousand queued events */
#define PROC_EVENTS_DATAGRAM_MAX 4096          /* a proc event datagram is under 100 bytes */
#define PROC_EVENTS_BATCH        512           /* datagrams per dispatch call */
#define PROC_EVENTS_CPUS_MAX     65536         /* sequence tracking beyond this is skipped */

typedef struct CpuSeq {
        uint32_t next; /* sequence number expected next on this CPU */
        bool seen;
} CpuSeq;

struct ProcEvents {
        struct nl_sock *sk; /* owned */
        ProcEventsCallback cb;
        void *userdata;
        uint32_t tag;        /* our netlink port id, to recognise our acks */
        uint32_t pending_op; /* the control message whose ack we wait for */
        bool ack_seen;
        uint32_t ack_err;
        bool subscribed; /* the kernel counts us as a listener */
        bool delivering; /* false during the handshake: events are dropped */
        bool lost;       /* events lost and not yet reported by dispatch */
        int cb_err;      /* the callback's error, to return from dispatch */
        CpuSeq *cpu_seq; /* owned; indexed by CPU */
        size_t n_cpu_seq;
        ProcEventsStats stats;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(ProcEvents *, proc_events_free);

/* libnl -NLE_* (or a positive NLE_*) to negative errno. */
static int errno_from_nlerr(int nlerr) {
        switch (abs(nlerr)) {
        case NLE_SUCCESS:
                return 0;
        case NLE_NOMEM:
                return -ENOMEM;
        case NLE_PERM:
                return -EPERM;
        case NLE_NOACCESS:
                return -EACCES;
        case NLE_AGAIN:
                return -EAGAIN;
        case NLE_INTR:
                return -EINTR;
        case NLE_INVAL:
                return -EINVAL;
        case NLE_OPNOTSUPP:
                return -EOPNOTSUPP;
        case NLE_PROTO_MISMATCH:
                return -EPROTONOSUPPORT;
        case NLE_MSG_OVERFLOW:
                return -ENOBUFS;
        default:
                return -EIO;
        }
}

/*
 * Replaces nl_recv(): one datagram, never blocking. Returns its size and a
 * malloc'd *buf (libnl frees it), -NLE_AGAIN when nothing is queued and
 * -NLE_MSG_OVERFLOW when the kernel dropped events for lack of buffer space.
 */
static int recv_datagram(struct nl_sock *sk, struct sockaddr_nl *nla, unsigned char **buf,
                         struct ucred **creds) {
        _cleanup_free_ unsigned char *b = malloc(PROC_EVENTS_DATAGRAM_MAX);
        struct iovec iov = { .iov_base = b, .iov_len = PROC_EVENTS_DATAGRAM_MAX };
        struct msghdr mh = {
                .msg_name = nla,
                .msg_namelen = sizeof(*nla),
                .msg_iov = &iov,
                .msg_iovlen = 1,
        };
        ssize_t n;

        if (!b)
                return -NLE_NOMEM;
        do
                n = recvmsg(nl_socket_get_fd(sk), &mh, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return -NLE_AGAIN;
                if (errno == ENOBUFS)
                        return -NLE_MSG_OVERFLOW;
                return -nl_syserr2nlerr(errno);
        }
        if (n == 0)
                return -NLE_AGAIN;
        if (mh.msg_flags & MSG_TRUNC)
                return -NLE_MSG_TRUNC; /* not a proc event; it is consumed */
        *buf = TAKE_PTR(b);
        return (int)n;
}

/* Counts the events the kernel numbered on this CPU but we never saw. */
static void seq_track(ProcEvents *pe, unsigned cpu, uint32_t seq) {
        if (cpu >= PROC_EVENTS_CPUS_MAX)
                return;
        if (cpu >= pe->n_cpu_seq) {
                size_t n = MAX((size_t)cpu + 1, pe->n_cpu_seq * 2);
                CpuSeq *grown = realloc(pe->cpu_seq, n * sizeof(*grown));

                if (!grown)
                        return; /* untracked until memory is back; the model rescans */
                memset(grown + pe->n_cpu_seq, 0, (n - pe->n_cpu_seq) * sizeof(*grown));
                pe->cpu_seq = grown;
                pe->n_cpu_seq = n;
        }

        CpuSeq *s = &pe->cpu_seq[cpu];
        uint32_t gap = seq - s->next;

        if (s->seen && gap != 0 && gap < UINT32_MAX / 2) {
                pe->stats.lost_events += gap;
                pe->lost = true;
        }
        s->next = seq + 1;
        s->seen = true;
}

/* The cn_msg.ack of our control message; the kernel answers with it + 1. */
static uint32_t ack_cookie(const ProcEvents *pe, uint32_t op) {
        return (pe->tag << 2) | op;
}

/* Return: true when ev is one of the types we report, with *out filled. */
static bool event_convert(const struct proc_event *ev, ProcEvent *out) {
        *out = (ProcEvent){ .type = ev->what, .cpu = ev->cpu, .timestamp_ns = ev->timestamp_ns };

        switch (ev->what) {
        case PROC_EVENT_FORK:
                out->pid = ev->event_data.fork.child_pid;
                out->tgid = ev->event_data.fork.child_tgid;
                out->parent_pid = ev->event_data.fork.parent_pid;
                out->parent_tgid = ev->event_data.fork.parent_tgid;
                return true;
        case PROC_EVENT_EXEC:
                out->pid = ev->event_data.exec.process_pid;
                out->tgid = ev->event_data.exec.process_tgid;
                return true;
        case PROC_EVENT_EXIT:
                out->pid = ev->event_data.exit.process_pid;
                out->tgid = ev->event_data.exit.process_tgid;
                out->exit_code = ev->event_data.exit.exit_code;
                out->exit_signal = (int)ev->event_data.exit.exit_signal;
                out->parent_pid = ev->event_data.exit.parent_pid;
                out->parent_tgid = ev->event_data.exit.parent_tgid;
                return true;
        case PROC_EVENT_COMM:
                out->pid = ev->event_data.comm.process_pid;
                out->tgid = ev->event_data.comm.process_tgid;
                memcpy(out->comm, ev->event_data.comm.comm, sizeof(out->comm) - 1);
                return true;
        default:
                return false;
        }
}

/* NL_CB_MSG_IN: every message received. Always consumes it (NL_SKIP). */
static int on_message(struct nl_msg *msg, void *userdata) {
        ProcEvents *pe = ASSERT_PTR(userdata);
        struct nlmsghdr *nh = nlmsg_hdr(msg);
        const unsigned char *data = nlmsg_data(nh);
        int len = nlmsg_datalen(nh);
        struct proc_event ev = { 0 };
        struct cn_msg cn;
        ProcEvent out;

        if (nh->nlmsg_type != NLMSG_DONE || len < (int)sizeof(cn))
                return NL_SKIP;
        memcpy(&cn, data, sizeof(cn)); /* copies: the payload is not 8-byte aligned */
        if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC ||
            cn.len > (size_t)len - sizeof(cn) || cn.len < offsetof(struct proc_event, event_data))
                return NL_SKIP;
        memcpy(&ev, data + sizeof(cn), MIN((size_t)cn.len, sizeof(ev)));

        /* Acknowledgements are numbered in the same per-CPU sequence (older
         * kernels sent them with cpu -1 and an echoed seq: not tracked). */
        seq_track(pe, ev.cpu, cn.seq);
        if (ev.what == PROC_EVENT_NONE) {
                /* An acknowledgement, multicast to all: ours if it answers our cookie. */
                if (cn.ack == ack_cookie(pe, pe->pending_op) + 1) {
                        pe->ack_seen = true;
                        pe->ack_err = ev.event_data.ack.err;
                }
                return NL_SKIP;
        }

        pe->stats.events++;
        if (!pe->delivering || !event_convert(&ev, &out))
                return NL_SKIP;

        int r = pe->cb(&out, pe->userdata);
        if (r < 0) {
                pe->cb_err = r;
                return NL_STOP;
        }
        return NL_SKIP;
}

/* Return: 1 when a datagram was consumed, 0 when none is queued, negative errno. */
static int recv_one(ProcEvents *pe) {
        int r = nl_recvmsgs_default(pe->sk);

        if (pe->cb_err < 0) {
                r = pe->cb_err;
                pe->cb_err = 0;
                return r;
        }
        if (r >= 0 || r == -NLE_MSG_TRUNC)
                return 1;
        if (r == -NLE_AGAIN)
                return 0;
        if (r == -NLE_MSG_OVERFLOW) {
                pe->stats.overflows++;
                pe->lost = true;
                return 1;
        }
        return errno_from_nlerr(r);
}

static int send_op(ProcEvents *pe, enum proc_cn_mcast_op op) {
        /* The kernel wants exactly a cn_msg followed by the 4-byte op. */
        unsigned char payload[sizeof(struct cn_msg) + sizeof(uint32_t)];
        struct cn_msg cn = {
                .id = { .idx = CN_IDX_PROC, .val = CN_VAL_PROC },
                .ack = ack_cookie(pe, op),
                .len = sizeof(uint32_t),
        };
        uint32_t op32 = op;
        struct nl_msg *msg;
        int r;

        memcpy(payload, &cn, sizeof(cn));
        memcpy(payload + sizeof(cn), &op32, sizeof(op32));

        msg = nlmsg_alloc_simple(NLMSG_DONE, 0);
        if (!msg)
                return -ENOMEM;
        r = nlmsg_append(msg, payload, sizeof(payload), NLMSG_ALIGNTO);
        if (r >= 0) {
                pe->pending_op = op;
                pe->ack_seen = false;
                r = nl_send_auto(pe->sk, msg);
                /* libnl folds ECONNREFUSED (no connector in this network
                 * namespace) into NLE_FAILURE; errno still says which. */
                if (r == -NLE_FAILURE)
                        r = negative_errno();
                else if (r < 0)
                        r = errno_from_nlerr(r);
        } else
                r = errno_from_nlerr(r);
        nlmsg_free(msg);
        return r < 0 ? r : 0;
}

/*
 * Sends PROC_CN_MCAST_LISTEN and reads until its acknowledgement, dropping
 * the events queued before it (they happened before we listened).
 */
static int subscribe(ProcEvents *pe) {
        int r = send_op(pe, PROC_CN_MCAST_LISTEN);
        if (r < 0)
                return r;

        /* The kernel queues the ack synchronously, so it is there already;
         * the bound only covers events that other listeners' traffic queued
         * before it. */
        for (unsigned i = 0; i < PROC_EVENTS_RCVBUF_BYTES / 64 && !pe->ack_seen; i++) {
                r = recv_one(pe);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        if (!pe->ack_seen) {
                if (pe->stats.overflows > 0) {
                        /* The ack may have been dropped with the rest: assume it went through. */
                        pe->subscribed = true;
                        return 0;
                }
                return -EOPNOTSUPP;
        }
        if (pe->ack_err != 0)
                return -(int)pe->ack_err;
        pe->subscribed = true;
        return 0;
}

static int socket_open(ProcEvents *pe) {
        int r, rcvbuf = PROC_EVENTS_RCVBUF_BYTES;
        struct nl_cb *cb;

        pe->sk = nl_socket_alloc();
        if (!pe->sk)
                return -ENOMEM;
        nl_socket_disable_seq_check(pe->sk);
        nl_socket_disable_auto_ack(pe->sk);
        r = nl_socket_modify_cb(pe->sk, NL_CB_MSG_IN, NL_CB_CUSTOM, on_message, pe);
        if (r < 0)
                return errno_from_nlerr(r);
        cb = nl_socket_get_cb(pe->sk);
        if (!cb)
                return -ENOMEM;
        nl_cb_overwrite_recv(cb, recv_datagram);
        nl_cb_put(cb);

        r = nl_connect(pe->sk, NETLINK_CONNECTOR);
        if (r < 0)
                return errno_from_nlerr(r);
        r = nl_socket_add_membership(pe->sk, CN_IDX_PROC);
        if (r < 0)
                return errno_from_nlerr(r);
        r = nl_socket_set_nonblocking(pe->sk);
        if (r < 0)
                return errno_from_nlerr(r);

        /* Room for bursts: past net.core.rmem_max when privileged, else up to it. */
        if (setsockopt(nl_socket_get_fd(pe->sk), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
                       sizeof(rcvbuf)) < 0)
                (void)nl_socket_set_buffer_size(pe->sk, rcvbuf, 0);

        pe->tag = nl_socket_get_local_port(pe->sk);
        return 0;
}

int proc_events_new(ProcEventsCallback cb, void *userdata, ProcEvents **ret) {
        _cleanup_(proc_events_freep) ProcEvents *pe = NULL;
        int r;

        if (!cb || !ret)
                return -EINVAL;
        pe = calloc(1, sizeof(*pe));
        if (!pe)
                return -ENOMEM;
        pe->cb = cb;
        pe->userdata = userdata;

        r = socket_open(pe);
        if (r < 0)
                return r;
        r = subscribe(pe);
        if (r < 0)
                return r;

        /* What the handshake saw predates the subscription; start clean. */
        pe->stats = (ProcEventsStats){ 0 };
        pe->lost = false;
        pe->delivering = true;
        *ret = TAKE_PTR(pe);
        return 0;
}

ProcEvents *proc_events_free(ProcEvents *pe) {
        if (!pe)
                return NULL;
        /* Best effort: until every listener leaves, the kernel builds a
         * message for each fork and exit on the system. */
        if (pe->subscribed)
                (void)send_op(pe, PROC_CN_MCAST_IGNORE);
        nl_socket_free(pe->sk);
        free(pe->cpu_seq);
        return mfree(pe);
}

int proc_events_fd(const ProcEvents *pe) {
        return nl_socket_get_fd(pe->sk);
}

int proc_events_dispatch(ProcEvents *pe) {
        bool read_any = false;

        for (unsigned i = 0; i < PROC_EVENTS_BATCH; i++) {
                int r = recv_one(pe);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                read_any = true;
        }
        if (pe->lost) {
                pe->lost = false;
                return PROC_EVENTS_LOST;
        }
        return read_any ? 1 : 0;
}

void proc_events_get_stats(const ProcEvents *pe, ProcEventsStats *ret) {
        *ret = pe->stats;
}
