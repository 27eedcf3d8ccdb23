/*
 * Relay client: one rank's session with its site relay.
 *
 * This code runs inside MPI applications, so it owns no threads, installs
 * no signal handlers and never blocks except in poll() for the time the
 * caller allowed.  The socket is nonblocking from creation on.
 *
 * Send side.  Each gc_rc_isend() becomes a request on a FIFO queue; the
 * request is cut into frames of at most max_chunk payload bytes.  The only
 * per-request write state is (frame_idx, frame_pos): which frame is next
 * and how many of its bytes (header + payload) already went out.  Headers
 * are re-encoded with gc_header_encode() whenever a frame is put into a
 * writev batch, which is cheap and means no partially written header has
 * to be kept around.  Payload iovecs point straight into the caller's
 * buffer.  Small control frames (PONG, BYE) live in their own byte queue
 * and are only ever placed on a frame boundary, so they cannot split a
 * DATA frame.
 *
 * Receive side.  A small state machine reads a 72-byte header, then the
 * frame's payload.  DATA payload is read with readv() directly into the
 * message buffer at its offset, with the following header as a second
 * iovec so a stream of frames costs about one syscall per frame.  Partly
 * received messages are kept in a hash table keyed by (src_rank,
 * msg_seq); chunks of different sources interleave freely.
 *
 * Callbacks (on_alloc, on_complete) may call gc_rc_isend(), but must not
 * call gc_rc_progress() or gc_rc_close() on the same session.
 */
#include "relay_client/gc_relay_client.h"

#include "gc_proto.h"
#include "gc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define RC_DEFAULT_CONNECT_TIMEOUT_MS 10000
/* DATA frames gathered into one sendmsg(); bounded to keep the iovec
 * array (2 entries per frame) on the stack and well under IOV_MAX. */
#define RC_BATCH_FRAMES 32
/* Stop adding frames to one sendmsg() beyond this many bytes: the socket
 * buffer will not take more anyway, and re-encoding headers of frames that
 * did not go out would be wasted work. */
#define RC_BATCH_BYTES (4u << 20)
/* Bytes read per gc_rc_progress() call at most, so a relay that keeps the
 * socket full cannot starve the caller's sends or its own loop forever. */
#define RC_READ_BUDGET (64u << 20)
/* Outgoing control frames (PONG, BYE) waiting for a frame boundary. */
#define RC_CTRL_FRAMES 32
/*
 * After BYE and shutdown(SHUT_WR) we wait for the relay to close its side.
 * "Written" only means the kernel has the bytes: if we closed first, a
 * relay still working through our tail would get EPIPE/ECONNRESET on its
 * next write and could drop what it has not read yet.  The wait uses the
 * caller's close budget; without one it is capped here.
 */
#define RC_CLOSE_LINGER_MS 30000

struct gc_rc_send {
    struct gc_rc_send *next;
    const uint8_t *buf;
    uint64_t len;
    uint64_t msg_seq;
    uint32_t chunk; /* payload bytes per frame, the last one excepted */
    uint64_t nframes;
    uint64_t frame_idx; /* next frame to (finish) writing */
    uint64_t frame_pos; /* bytes of that frame already written */
    uint32_t dst_rank;
    uint32_t context_id;
    int32_t tag;
    int in_queue; /* still referenced by the session's queue */
    int detached; /* the caller freed it; the library frees it when sent */
    int done;
    uint8_t copy[GC_RC_COPIED]; /* buf of a message this small */
};

/* Next msg_seq per destination rank: open addressing, linear probing. */
struct seq_slot {
    uint32_t key_plus1; /* 0 marks an empty slot */
    uint64_t next_seq;
};

struct seq_map {
    struct seq_slot *slots;
    size_t cap; /* power of two */
    size_t count;
};

struct rx_msg {
    struct rx_msg *bucket_next;
    struct gc_rc_msg_info info;
    uint8_t *buf;
    uint64_t received; /* bytes in place, also the next expected offset */
    int library_allocated;
};

enum rx_state {
    RX_HEADER, /* collecting a frame header */
    RX_DATA,   /* DATA payload into the current message's buffer */
    RX_CTRL,   /* ERROR text into rx_ctrl */
};

struct gc_rc {
    int fd;
    uint32_t job_id;
    uint32_t rank;
    uint8_t version; /* negotiated protocol version */
    uint32_t max_chunk;
    uint32_t wan_streams; /* the relay's streams per link; 0 = not told */
    gc_rc_alloc_fn on_alloc;
    gc_rc_complete_fn on_complete;
    void *cb_arg;

    /* send side */
    struct gc_rc_send *tx_head;
    struct gc_rc_send *tx_tail;
    uint64_t tx_pending; /* DATA wire bytes queued, headers included */
    int tx_kick;         /* something was queued since the last flush */
    struct seq_map tx_seq;
    uint8_t ctrl_out[RC_CTRL_FRAMES * GC_HEADER_SIZE];
    size_t ctrl_len;
    size_t ctrl_pos;
    uint8_t tx_hdr[RC_BATCH_FRAMES + 1][GC_HEADER_SIZE];

    /* receive side */
    enum rx_state rx_state;
    uint8_t rx_hdr[GC_HEADER_SIZE];
    size_t rx_hdr_have;
    struct gc_frame_header rx_frame; /* header of the frame being read */
    struct rx_msg *rx_cur;           /* message RX_DATA reads into */
    uint64_t rx_left;                /* payload bytes of the frame to go */
    uint8_t rx_ctrl[GC_MAX_CONTROL_PAYLOAD];
    size_t rx_ctrl_have;
    struct rx_msg **rx_buckets;
    size_t rx_nbuckets; /* power of two */
    size_t rx_count;

    int completed;    /* messages completed in the running progress call */
    int bye_received; /* relay announced it is closing */
    int failed;
    int err_code;
    char err[512];
    /* Why the connection itself went, when that ended the session (not a
     * protocol error or the relay's ERROR): the caller names the relay it
     * lost, which this file does not know by name.  "" = not lost. */
    char lost[160];
};

/* ---- small helpers ---------------------------------------------------- */

static void set_text(char *out, size_t out_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_text(char *out, size_t out_len, const char *fmt, ...)
{
    if (out == NULL || out_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, out_len, fmt, ap);
    va_end(ap);
}

/* Record a fatal error.  The first cause wins: later ones are usually
 * consequences (a write failing after the relay's ERROR, say).  0 when
 * one was recorded before. */
static int rc_vfail(struct gc_rc *rc, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static int rc_vfail(struct gc_rc *rc, const char *fmt, va_list ap)
{
    if (rc->failed)
        return 0;
    rc->failed = 1;
    vsnprintf(rc->err, sizeof rc->err, fmt, ap);
    return 1;
}

static void rc_fail(struct gc_rc *rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rc_fail(struct gc_rc *rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rc_vfail(rc, fmt, ap);
    va_end(ap);
}

static void rc_lost(struct gc_rc *rc, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* rc_fail for a connection that is gone: `reason` is what the caller
 * shows after the relay's name (gc_rc_lost). */
static void rc_lost(struct gc_rc *rc, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (rc_vfail(rc, fmt, ap))
        snprintf(rc->lost, sizeof rc->lost, "%s", reason);
    va_end(ap);
}

/* Relay text is untrusted: keep it printable and stop at a NUL. */
static void sanitize_text(const uint8_t *in, size_t len, char *out,
                          size_t out_len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < out_len; i++) {
        if (in[i] == '\0')
            break;
        out[n++] = (in[i] < 0x20 || in[i] == 0x7f) ? '?' : (char)in[i];
    }
    out[n] = '\0';
}

static uint64_t deadline_after_ms(int ms)
{
    return gc_now_ns() + (uint64_t)ms * 1000000ull;
}

/* Milliseconds left until `deadline`, rounded up; -1 for "no deadline". */
static int ms_until(uint64_t deadline)
{
    if (deadline == UINT64_MAX)
        return -1;
    uint64_t now = gc_now_ns();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999999ull) / 1000000ull;
    return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* ---- maps ------------------------------------------------------------- */

static size_t mix_hash(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static int seq_map_grow(struct seq_map *map)
{
    size_t cap = map->cap ? map->cap * 2 : 64;
    struct seq_slot *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < map->cap; i++) {
        if (map->slots[i].key_plus1 == 0)
            continue;
        size_t j = mix_hash(map->slots[i].key_plus1) & (cap - 1);
        while (slots[j].key_plus1 != 0)
            j = (j + 1) & (cap - 1);
        slots[j] = map->slots[i];
    }
    free(map->slots);
    map->slots = slots;
    map->cap = cap;
    return 0;
}

/* Counter for `dst`, created at 0 on first use; NULL when out of memory. */
static uint64_t *seq_map_get(struct seq_map *map, uint32_t dst)
{
    uint32_t key = dst + 1; /* ranks are <= GC_MAX_RANK, so no wrap */
    if ((map->count + 1) * 2 > map->cap && seq_map_grow(map) != 0)
        return NULL;
    size_t j = mix_hash(key) & (map->cap - 1);
    while (map->slots[j].key_plus1 != 0 && map->slots[j].key_plus1 != key)
        j = (j + 1) & (map->cap - 1);
    if (map->slots[j].key_plus1 == 0) {
        map->slots[j].key_plus1 = key;
        map->slots[j].next_seq = 0;
        map->count++;
    }
    return &map->slots[j].next_seq;
}

static size_t rx_bucket(const struct gc_rc *rc, uint32_t src, uint64_t seq)
{
    return mix_hash(seq * 0x9e3779b97f4a7c15ull ^ src) & (rc->rx_nbuckets - 1);
}

static struct rx_msg *rx_find(const struct gc_rc *rc, uint32_t src,
                              uint64_t seq)
{
    struct rx_msg *m = rc->rx_buckets[rx_bucket(rc, src, seq)];
    while (m != NULL && (m->info.src_rank != src || m->info.msg_seq != seq))
        m = m->bucket_next;
    return m;
}

static int rx_insert(struct gc_rc *rc, struct rx_msg *msg)
{
    if (rc->rx_count >= rc->rx_nbuckets) {
        size_t n = rc->rx_nbuckets * 2;
        struct rx_msg **b = calloc(n, sizeof *b);
        if (b == NULL)
            return -1;
        struct rx_msg **old = rc->rx_buckets;
        size_t old_n = rc->rx_nbuckets;
        rc->rx_buckets = b;
        rc->rx_nbuckets = n;
        for (size_t i = 0; i < old_n; i++) {
            while (old[i] != NULL) {
                struct rx_msg *m = old[i];
                old[i] = m->bucket_next;
                size_t k = rx_bucket(rc, m->info.src_rank, m->info.msg_seq);
                m->bucket_next = b[k];
                b[k] = m;
            }
        }
        free(old);
    }
    size_t k = rx_bucket(rc, msg->info.src_rank, msg->info.msg_seq);
    msg->bucket_next = rc->rx_buckets[k];
    rc->rx_buckets[k] = msg;
    rc->rx_count++;
    return 0;
}

static void rx_remove(struct gc_rc *rc, struct rx_msg *msg)
{
    struct rx_msg **p =
        &rc->rx_buckets[rx_bucket(rc, msg->info.src_rank, msg->info.msg_seq)];
    while (*p != msg)
        p = &(*p)->bucket_next;
    *p = msg->bucket_next;
    rc->rx_count--;
}

/* ---- session lifetime ------------------------------------------------- */

static void rc_free(struct gc_rc *rc)
{
    if (rc == NULL)
        return;
    if (rc->fd >= 0)
        close(rc->fd);
    /* Requests the caller still holds stay valid (gc_rc_send_free frees
     * them later); only the ones it already released are ours. */
    struct gc_rc_send *req = rc->tx_head;
    while (req != NULL) {
        struct gc_rc_send *next = req->next;
        req->in_queue = 0;
        req->next = NULL;
        if (req->detached)
            free(req);
        req = next;
    }
    for (size_t i = 0; i < rc->rx_nbuckets; i++) {
        struct rx_msg *m = rc->rx_buckets[i];
        while (m != NULL) {
            struct rx_msg *next = m->bucket_next;
            if (m->library_allocated)
                free(m->buf);
            free(m);
            m = next;
        }
    }
    free(rc->rx_buckets);
    free(rc->tx_seq.slots);
    free(rc);
}

static void tx_flush_or_fail(struct gc_rc *rc);

static int tx_busy(const struct gc_rc *rc)
{
    return rc->tx_head != NULL || rc->ctrl_pos < rc->ctrl_len;
}

/* Messages not yet through, in either direction (an unsent PONG does not
 * count: it means nothing once the relay leaves). */
static int rc_has_pending(const struct gc_rc *rc)
{
    return rc->tx_head != NULL || rc->rx_count > 0 ||
           rc->rx_state != RX_HEADER || rc->rx_hdr_have > 0;
}

/* ---- connect and handshake -------------------------------------------- */

/* Wait for `events` on fd until `deadline`; 0 when ready, -1 on timeout or
 * poll failure (errno says which). */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = events};
        int ms = ms_until(deadline);
        if (ms == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        int n = poll(&pfd, 1, ms);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static int connect_endpoint(const struct gc_endpoint *ep, const char *name,
                            uint64_t deadline, char *why, size_t why_len)
{
    int status = -1;
    int fd = socket(ep->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        set_text(why, why_len, "cannot create socket: %s", strerror(errno));
        goto cleanup;
    }
    for (;;) {
        if (connect(fd, (const struct sockaddr *)&ep->addr, ep->addr_len) == 0)
            break;
        if (errno == EINTR)
            continue;
        /* A full Unix listen backlog reports EAGAIN rather than queueing
         * the caller; a busy relay deserves another try within budget. */
        if (errno == EAGAIN && ep->family == AF_UNIX) {
            if (ms_until(deadline) == 0) {
                set_text(why, why_len, "cannot connect to %s: relay busy",
                         name);
                goto cleanup;
            }
            poll(NULL, 0, 10);
            continue;
        }
        if (errno != EINPROGRESS) {
            set_text(why, why_len, "cannot connect to %s: %s", name,
                     strerror(errno));
            goto cleanup;
        }
        if (wait_fd(fd, POLLOUT, deadline) != 0) {
            set_text(why, why_len, "cannot connect to %s: %s", name,
                     strerror(errno));
            goto cleanup;
        }
        int so_error = 0;
        socklen_t so_len = sizeof so_error;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &so_len) != 0)
            so_error = errno;
        if (so_error != 0) {
            set_text(why, why_len, "cannot connect to %s: %s", name,
                     strerror(so_error));
            goto cleanup;
        }
        break;
    }
    if (ep->family != AF_UNIX) {
        /* Small frames (a PONG, a short message) must not wait for Nagle. */
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
            set_text(why, why_len, "cannot set TCP_NODELAY: %s",
                     strerror(errno));
            goto cleanup;
        }
    }
    status = fd;
    fd = -1;
cleanup:
    if (fd >= 0)
        close(fd);
    return status;
}

static int send_all(int fd, const uint8_t *buf, size_t len, uint64_t deadline,
                    char *why, size_t why_len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = send(fd, buf + done, len - done, MSG_NOSIGNAL);
        if (n >= 0) {
            done += (size_t)n;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            set_text(why, why_len, "write to relay failed: %s",
                     strerror(errno));
            return -1;
        }
        if (wait_fd(fd, POLLOUT, deadline) != 0) {
            set_text(why, why_len, "handshake with relay: %s",
                     errno == ETIMEDOUT ? "timed out" : strerror(errno));
            return -1;
        }
    }
    return 0;
}

static int recv_exact(int fd, uint8_t *buf, size_t len, uint64_t deadline,
                      char *why, size_t why_len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = recv(fd, buf + done, len - done, 0);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0) {
            set_text(why, why_len,
                     "relay closed the connection during the handshake");
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            set_text(why, why_len, "read from relay failed: %s",
                     strerror(errno));
            return -1;
        }
        if (wait_fd(fd, POLLIN, deadline) != 0) {
            set_text(why, why_len, "handshake with relay: %s",
                     errno == ETIMEDOUT ? "no answer within the timeout"
                                        : strerror(errno));
            return -1;
        }
    }
    return 0;
}

/*
 * Read one control frame of the handshake.  An ERROR frame is turned into
 * the "relay refused" reason here so each caller only handles the frame
 * type it expects.
 */
static int recv_handshake_frame(struct gc_rc *rc, unsigned expect,
                                uint64_t deadline, struct gc_frame_header *h,
                                uint8_t *payload, char *why, size_t why_len)
{
    uint8_t raw[GC_HEADER_SIZE];
    if (recv_exact(rc->fd, raw, sizeof raw, deadline, why, why_len) != 0)
        return -1;
    enum gc_decode_status ds = gc_header_decode(raw, h);
    if (ds != GC_DECODE_OK) {
        set_text(why, why_len, "bad frame from relay during handshake: %s",
                 gc_decode_status_str(ds));
        return -1;
    }
    if (h->type != expect && h->type != GC_FRAME_ERROR) {
        set_text(why, why_len,
                 "protocol error: relay sent %s during the handshake, "
                 "expected %s",
                 gc_frame_type_name(h->type), gc_frame_type_name(expect));
        return -1;
    }
    /* HELLO, AUTH_OK and ERROR payloads are bounded by the decoder to
     * GC_MAX_CONTROL_PAYLOAD, the size of `payload`. */
    if (recv_exact(rc->fd, payload, h->payload_len, deadline, why, why_len) !=
        0)
        return -1;
    if (h->type == GC_FRAME_ERROR) {
        char text[GC_MAX_CONTROL_PAYLOAD + 1];
        sanitize_text(payload, h->payload_len, text, sizeof text);
        set_text(why, why_len, "relay refused: %s: %s",
                 gc_error_code_name((unsigned)h->tag), text);
        return -1;
    }
    return 0;
}

static int handshake(struct gc_rc *rc, const struct gc_rc_options *opt,
                     uint64_t deadline, char *why, size_t why_len)
{
    uint8_t frame[GC_HEADER_SIZE + GC_MAX_CONTROL_PAYLOAD];
    uint8_t payload[GC_MAX_CONTROL_PAYLOAD];
    struct gc_frame_header h;

    struct gc_hello ours = {
        .version_min = GC_PROTO_VERSION_MIN,
        .version_max = GC_PROTO_VERSION,
        .capabilities = GC_CAPS_ALL,
        .role = GC_ROLE_RANK,
    };
    if (gc_random_bytes(ours.nonce, sizeof ours.nonce) != 0) {
        set_text(why, why_len, "cannot generate a nonce");
        return -1;
    }
    /* The header version must be one every relay can parse before the
     * negotiation has happened. */
    h = (struct gc_frame_header){
        .version = GC_PROTO_VERSION_MIN,
        .type = GC_FRAME_HELLO,
        .job_id = rc->job_id,
        .src_rank = rc->rank,
        .payload_len = GC_HELLO_SIZE,
    };
    gc_header_encode(&h, frame);
    gc_hello_encode(&ours, frame + GC_HEADER_SIZE, GC_HELLO_SIZE);
    if (send_all(rc->fd, frame, GC_HEADER_SIZE + GC_HELLO_SIZE, deadline, why,
                 why_len) != 0)
        return -1;

    struct gc_hello theirs;
    if (recv_handshake_frame(rc, GC_FRAME_HELLO, deadline, &h, payload, why,
                             why_len) != 0)
        return -1;
    if (gc_hello_decode(payload, h.payload_len, &theirs) != 0) {
        set_text(why, why_len, "protocol error: malformed HELLO from relay");
        return -1;
    }
    if (theirs.role != GC_ROLE_RELAY) {
        set_text(why, why_len,
                 "protocol error: endpoint is not a relay (role %u)",
                 theirs.role);
        return -1;
    }
    if (theirs.version_min != theirs.version_max ||
        theirs.version_max < GC_PROTO_VERSION_MIN ||
        theirs.version_max > GC_PROTO_VERSION) {
        set_text(why, why_len,
                 "protocol error: relay chose version %u..%u, we speak "
                 "%u..%u",
                 theirs.version_min, theirs.version_max, GC_PROTO_VERSION_MIN,
                 GC_PROTO_VERSION);
        return -1;
    }
    if (theirs.max_chunk == 0 || theirs.max_chunk > GC_MAX_PAYLOAD) {
        set_text(why, why_len,
                 "protocol error: relay announced chunk size %u (must be "
                 "1..%u)",
                 theirs.max_chunk, GC_MAX_PAYLOAD);
        return -1;
    }
    rc->version = (uint8_t)theirs.version_max;
    rc->max_chunk = theirs.max_chunk;
    rc->wan_streams = theirs.stream_count;

    h = (struct gc_frame_header){
        .version = rc->version,
        .type = GC_FRAME_AUTH,
        .job_id = rc->job_id,
        .src_rank = rc->rank,
        .payload_len = GC_MAC_SIZE,
    };
    gc_header_encode(&h, frame);
    if (gc_auth_mac(opt->token, opt->token_len, GC_AUTH_LABEL_INITIATOR,
                    ours.nonce, theirs.nonce, rc->rank,
                    frame + GC_HEADER_SIZE) != 0) {
        set_text(why, why_len, "cannot compute the authentication code");
        return -1;
    }
    if (send_all(rc->fd, frame, GC_HEADER_SIZE + GC_MAC_SIZE, deadline, why,
                 why_len) != 0)
        return -1;

    if (recv_handshake_frame(rc, GC_FRAME_AUTH_OK, deadline, &h, payload, why,
                             why_len) != 0)
        return -1;
    uint8_t expect[GC_MAC_SIZE];
    if (gc_auth_mac(opt->token, opt->token_len, GC_AUTH_LABEL_RESPONDER,
                    ours.nonce, theirs.nonce, rc->rank, expect) != 0) {
        set_text(why, why_len, "cannot compute the authentication code");
        return -1;
    }
    if (h.src_rank != rc->rank || !gc_auth_mac_equal(payload, expect)) {
        set_text(why, why_len, "relay failed to prove the job token");
        return -1;
    }
    return 0;
}

int gc_rc_connect(const struct gc_rc_options *opt, struct gc_rc **out,
                  char *err, size_t err_len)
{
    int status = -1;
    struct gc_rc *rc = NULL;
    char why[512] = "";

    if (out == NULL || opt == NULL) {
        set_text(why, sizeof why, "no options or result pointer given");
        goto cleanup;
    }
    *out = NULL;
    if (opt->endpoint == NULL) {
        set_text(why, sizeof why, "no relay endpoint given");
        goto cleanup;
    }
    if (opt->token == NULL || opt->token_len == 0) {
        set_text(why, sizeof why, "no job token given");
        goto cleanup;
    }
    if (opt->rank > GC_MAX_RANK) {
        set_text(why, sizeof why, "rank %u out of range (max %u)", opt->rank,
                 GC_MAX_RANK);
        goto cleanup;
    }
    struct gc_endpoint ep;
    if (gc_endpoint_parse(opt->endpoint, &ep, why, sizeof why) != 0)
        goto cleanup;

    rc = calloc(1, sizeof *rc);
    if (rc == NULL) {
        set_text(why, sizeof why, "out of memory");
        goto cleanup;
    }
    rc->fd = -1;
    rc->job_id = opt->job_id;
    rc->rank = opt->rank;
    rc->on_alloc = opt->on_alloc;
    rc->on_complete = opt->on_complete;
    rc->cb_arg = opt->cb_arg;
    rc->rx_state = RX_HEADER;
    rc->rx_nbuckets = 16;
    rc->rx_buckets = calloc(rc->rx_nbuckets, sizeof *rc->rx_buckets);
    if (rc->rx_buckets == NULL) {
        set_text(why, sizeof why, "out of memory");
        goto cleanup;
    }

    uint64_t deadline = deadline_after_ms(opt->connect_timeout_ms > 0
                                              ? opt->connect_timeout_ms
                                              : RC_DEFAULT_CONNECT_TIMEOUT_MS);
    rc->fd = connect_endpoint(&ep, opt->endpoint, deadline, why, sizeof why);
    if (rc->fd < 0)
        goto cleanup;
    if (handshake(rc, opt, deadline, why, sizeof why) != 0)
        goto cleanup;

    *out = rc;
    rc = NULL;
    status = 0;
cleanup:
    if (status != 0)
        set_text(err, err_len, "%s", why);
    rc_free(rc);
    return status;
}

/* ---- send path -------------------------------------------------------- */

/*
 * The chunk size of a message: the relay's max_chunk, but a message that
 * fits in fewer chunks than the relay has WAN streams is cut into one
 * chunk per stream (in whole pages, at least one), so it crosses the WAN on
 * all of them at once.  Why: TCP BBR paces a request/response flow at what
 * it last saw it deliver, about one burst per round trip, so a burst costs
 * a fraction of a round trip on top of the delay however fast the link;
 * smaller bursts on more streams pay less of it (docs/protocol.md §8.1,
 * docs/performance/history.md has the measurements).
 */
static uint32_t message_chunk(const struct gc_rc *rc, uint64_t len)
{
    enum { PAGE = 4096 };
    if (rc->wan_streams < 2)
        return rc->max_chunk;
    uint64_t per_stream = (len + rc->wan_streams - 1) / rc->wan_streams;
    per_stream = (per_stream + PAGE - 1) / PAGE * PAGE;
    if (per_stream < PAGE)
        per_stream = PAGE;
    return per_stream < rc->max_chunk ? (uint32_t)per_stream : rc->max_chunk;
}

static uint32_t frame_payload_len(const struct gc_rc_send *req, uint64_t idx)
{
    uint64_t left = req->len - idx * req->chunk;
    return (uint32_t)(left < req->chunk ? left : req->chunk);
}

static uint64_t frame_wire_len(const struct gc_rc_send *req, uint64_t idx)
{
    return GC_HEADER_SIZE + (uint64_t)frame_payload_len(req, idx);
}

/*
 * Append the not yet written part of frame `idx` of `req`, starting at
 * byte `pos` of the frame, to the iovec array; the header is encoded into
 * `hdr`.
 */
static size_t add_frame(const struct gc_rc *rc, const struct gc_rc_send *req,
                        uint64_t idx, uint64_t pos, uint8_t *hdr,
                        struct iovec *iov, int *niov)
{
    uint32_t plen = frame_payload_len(req, idx);
    uint64_t off = idx * req->chunk;
    struct gc_frame_header h = {
        .version = rc->version,
        .type = GC_FRAME_DATA,
        .flags = idx + 1 == req->nframes ? GC_FLAG_LAST_CHUNK : 0,
        .job_id = rc->job_id,
        .src_rank = rc->rank,
        .dst_rank = req->dst_rank,
        .context_id = req->context_id,
        .tag = req->tag,
        .payload_len = plen,
        .msg_seq = req->msg_seq,
        .msg_len = req->len,
        .chunk_offset = off,
    };
    size_t added = 0;
    if (pos < GC_HEADER_SIZE) {
        gc_header_encode(&h, hdr);
        iov[*niov].iov_base = hdr + pos;
        iov[*niov].iov_len = GC_HEADER_SIZE - pos;
        added += iov[*niov].iov_len;
        (*niov)++;
        pos = 0;
    } else {
        pos -= GC_HEADER_SIZE;
    }
    if (plen > pos) {
        /* The library never writes through this pointer; iovec is just
         * not const-qualified. */
        iov[*niov].iov_base = (void *)(req->buf + off + pos);
        iov[*niov].iov_len = plen - pos;
        added += iov[*niov].iov_len;
        (*niov)++;
    }
    return added;
}

/* The head request's current frame is fully written: move on. */
static void finish_frame(struct gc_rc *rc)
{
    struct gc_rc_send *req = rc->tx_head;
    req->frame_idx++;
    req->frame_pos = 0;
    if (req->frame_idx < req->nframes)
        return;
    rc->tx_head = req->next;
    if (rc->tx_head == NULL)
        rc->tx_tail = NULL;
    req->next = NULL;
    req->in_queue = 0;
    req->done = 1;
    rc->completed++;
    if (req->detached)
        free(req);
}

/* Consume `n` bytes one data frame at a time, starting at the head. */
static void advance_data(struct gc_rc *rc, size_t n)
{
    while (n > 0) {
        struct gc_rc_send *req = rc->tx_head;
        uint64_t rem = frame_wire_len(req, req->frame_idx) - req->frame_pos;
        if (n < rem) {
            req->frame_pos += n;
            rc->tx_pending -= n;
            return;
        }
        n -= (size_t)rem;
        rc->tx_pending -= rem;
        finish_frame(rc);
    }
}

/*
 * Account for `n` bytes written by one sendmsg().  The batch was laid out
 * as: the rest of a partially written head frame (A), pending control
 * bytes (B), further whole data frames (C).  Walking the same order here
 * keeps the position exact however short the write was.
 */
static void tx_advance(struct gc_rc *rc, size_t n)
{
    struct gc_rc_send *req = rc->tx_head;
    if (req != NULL && req->frame_pos > 0) {
        uint64_t rem = frame_wire_len(req, req->frame_idx) - req->frame_pos;
        size_t take = n < rem ? n : (size_t)rem;
        advance_data(rc, take);
        n -= take;
        if (n == 0)
            return;
    }
    size_t ctrl_rem = rc->ctrl_len - rc->ctrl_pos;
    if (ctrl_rem > 0) {
        size_t take = n < ctrl_rem ? n : ctrl_rem;
        rc->ctrl_pos += take;
        n -= take;
        if (rc->ctrl_pos == rc->ctrl_len)
            rc->ctrl_pos = rc->ctrl_len = 0;
    }
    advance_data(rc, n);
}

/* Write until the socket is full or nothing is left; 0, or -1 with errno
 * from the failed write. */
static int tx_flush(struct gc_rc *rc)
{
    rc->tx_kick = 0;
    while (tx_busy(rc)) {
        struct iovec iov[2 * (RC_BATCH_FRAMES + 1) + 1];
        int niov = 0;
        size_t nhdr = 0;
        size_t total = 0;
        struct gc_rc_send *req = rc->tx_head;
        uint64_t idx = req != NULL ? req->frame_idx : 0;

        if (req != NULL && req->frame_pos > 0) {
            total += add_frame(rc, req, idx, req->frame_pos, rc->tx_hdr[nhdr++],
                               iov, &niov);
            if (++idx == req->nframes) {
                req = req->next;
                idx = 0;
            }
        }
        if (rc->ctrl_pos < rc->ctrl_len) {
            iov[niov].iov_base = rc->ctrl_out + rc->ctrl_pos;
            iov[niov].iov_len = rc->ctrl_len - rc->ctrl_pos;
            total += iov[niov].iov_len;
            niov++;
        }
        while (req != NULL && nhdr <= RC_BATCH_FRAMES &&
               total < RC_BATCH_BYTES) {
            total += add_frame(rc, req, idx, 0, rc->tx_hdr[nhdr++], iov, &niov);
            if (++idx == req->nframes) {
                req = req->next;
                idx = 0;
            }
        }

        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t n = sendmsg(rc->fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        tx_advance(rc, (size_t)n);
        /* A short write means the socket buffer is full; asking again
         * would only return EAGAIN. */
        if ((size_t)n < total)
            return 0;
    }
    return 0;
}

/* Queue a header-only control frame; dropped (with no harm beyond a late
 * PONG) if a relay floods us while not reading. */
static void queue_ctrl(struct gc_rc *rc, const struct gc_frame_header *h)
{
    if (rc->ctrl_pos > 0 &&
        rc->ctrl_len + GC_HEADER_SIZE > sizeof rc->ctrl_out) {
        memmove(rc->ctrl_out, rc->ctrl_out + rc->ctrl_pos,
                rc->ctrl_len - rc->ctrl_pos);
        rc->ctrl_len -= rc->ctrl_pos;
        rc->ctrl_pos = 0;
    }
    if (rc->ctrl_len + GC_HEADER_SIZE > sizeof rc->ctrl_out)
        return;
    gc_header_encode(h, rc->ctrl_out + rc->ctrl_len);
    rc->ctrl_len += GC_HEADER_SIZE;
    rc->tx_kick = 1;
}

int gc_rc_isend(struct gc_rc *rc, uint32_t dst_rank, uint32_t context_id,
                int32_t tag, const void *buf, uint64_t len,
                struct gc_rc_send **req)
{
    /* Bad arguments are the caller's bug, not the connection's: refuse
     * the call but keep the session usable. */
    if (rc == NULL || req == NULL || dst_rank > GC_MAX_RANK ||
        len > GC_MAX_MESSAGE || (buf == NULL && len > 0)) {
        errno = EINVAL;
        return -1;
    }
    *req = NULL;
    if (rc->bye_received)
        rc_lost(rc, "the relay ended the session", "relay closed the session");
    if (rc->failed) {
        errno = ECONNRESET;
        return -1;
    }
    struct gc_rc_send *r = calloc(1, sizeof *r);
    uint64_t *seq = seq_map_get(&rc->tx_seq, dst_rank);
    if (r == NULL || seq == NULL) {
        free(r);
        errno = ENOMEM;
        return -1;
    }
    r->buf = buf;
    if (len <= GC_RC_COPIED && len > 0)
        r->buf = memcpy(r->copy, buf, len);
    r->len = len;
    r->dst_rank = dst_rank;
    r->context_id = context_id;
    r->tag = tag;
    r->msg_seq = (*seq)++;
    r->chunk = message_chunk(rc, len);
    r->nframes = len == 0 ? 1 : (len + r->chunk - 1) / r->chunk;
    r->in_queue = 1;
    if (rc->tx_tail != NULL)
        rc->tx_tail->next = r;
    else
        rc->tx_head = r;
    rc->tx_tail = r;
    rc->tx_pending += r->nframes * GC_HEADER_SIZE + len;
    rc->tx_kick = 1;
    *req = r;
    /* Eager start on an idle connection: the kernel usually takes a small
     * message whole, sparing the caller a poll() round before the write. */
    if (rc->tx_head == r) {
        tx_flush_or_fail(rc);
        if (rc->failed) {
            /* A failed call hands out no request: the session frees it. */
            gc_rc_send_free(r);
            *req = NULL;
            return -1;
        }
    }
    return 0;
}

int gc_rc_send_done(const struct gc_rc_send *req)
{
    return req != NULL && req->done;
}

uint64_t gc_rc_send_seq(const struct gc_rc_send *req)
{
    return req->msg_seq;
}

void gc_rc_send_free(struct gc_rc_send *req)
{
    if (req == NULL)
        return;
    if (req->in_queue)
        req->detached = 1;
    else
        free(req);
}

/* ---- receive path ----------------------------------------------------- */

static void complete_msg(struct gc_rc *rc, struct rx_msg *msg)
{
    rx_remove(rc, msg);
    if (rc->rx_cur == msg)
        rc->rx_cur = NULL;
    rc->completed++;
    if (rc->on_complete != NULL)
        rc->on_complete(rc->cb_arg, &msg->info, msg->buf,
                        msg->library_allocated);
    else if (msg->library_allocated)
        free(msg->buf);
    free(msg);
}

static void handle_data_header(struct gc_rc *rc)
{
    const struct gc_frame_header *h = &rc->rx_frame;
    if (h->dst_rank != rc->rank || h->job_id != rc->job_id) {
        rc_fail(rc,
                "protocol error: relay delivered a message for rank %u of "
                "job %u to rank %u of job %u",
                h->dst_rank, h->job_id, rc->rank, rc->job_id);
        return;
    }
    struct rx_msg *msg = rx_find(rc, h->src_rank, h->msg_seq);
    if (msg == NULL) {
        /* The relay keeps each source's chunks in send order, and a sender
         * writes a message's chunks by increasing offset, so a message
         * must begin at offset 0. */
        if (h->chunk_offset != 0) {
            rc_fail(rc,
                    "protocol error: chunk at offset %llu of unknown "
                    "message %llu from rank %u",
                    (unsigned long long)h->chunk_offset,
                    (unsigned long long)h->msg_seq, h->src_rank);
            return;
        }
        msg = calloc(1, sizeof *msg);
        if (msg == NULL) {
            rc_fail(rc, "out of memory");
            return;
        }
        msg->info = (struct gc_rc_msg_info){
            .src_rank = h->src_rank,
            .dst_rank = h->dst_rank,
            .context_id = h->context_id,
            .tag = h->tag,
            .msg_seq = h->msg_seq,
            .msg_len = h->msg_len,
        };
        if (rc->on_alloc != NULL)
            msg->buf = rc->on_alloc(rc->cb_arg, &msg->info);
        if (msg->buf == NULL) {
            msg->buf = malloc(h->msg_len > 0 ? (size_t)h->msg_len : 1);
            msg->library_allocated = 1;
        }
        if (msg->buf == NULL || rx_insert(rc, msg) != 0) {
            rc_fail(rc, "out of memory for a %llu-byte message",
                    (unsigned long long)h->msg_len);
            if (msg->library_allocated)
                free(msg->buf);
            free(msg);
            return;
        }
    } else if (msg->info.msg_len != h->msg_len ||
               msg->info.context_id != h->context_id ||
               msg->info.tag != h->tag) {
        rc_fail(rc,
                "protocol error: chunk of message %llu from rank %u "
                "disagrees with its first chunk (length, context or tag)",
                (unsigned long long)h->msg_seq, h->src_rank);
        return;
    } else if (h->chunk_offset != msg->received) {
        /* Anything but the next offset is a lost or repeated chunk, which
         * would otherwise complete the message with a hole in it. */
        rc_fail(rc,
                "protocol error: chunk at offset %llu of message %llu from "
                "rank %u, expected offset %llu",
                (unsigned long long)h->chunk_offset,
                (unsigned long long)h->msg_seq, h->src_rank,
                (unsigned long long)msg->received);
        return;
    }
    if (h->payload_len == 0) {
        /* Decoding allows an empty chunk only for an empty message. */
        complete_msg(rc, msg);
        return;
    }
    rc->rx_cur = msg;
    rc->rx_left = h->payload_len;
    rc->rx_state = RX_DATA;
}

static void handle_error_frame(struct gc_rc *rc)
{
    char text[GC_MAX_CONTROL_PAYLOAD + 1];
    sanitize_text(rc->rx_ctrl, rc->rx_ctrl_have, text, sizeof text);
    rc->err_code = rc->rx_frame.tag;
    /* A relay that stops ends every session so: for the rank, the relay
     * is gone, as if it had died. */
    if (rc->err_code == GC_ERR_SHUTDOWN)
        rc_lost(rc, text, "relay error %s: %s",
                gc_error_code_name((unsigned)rc->rx_frame.tag), text);
    else
        rc_fail(rc, "relay error %s: %s",
                gc_error_code_name((unsigned)rc->rx_frame.tag), text);
}

static void handle_header(struct gc_rc *rc)
{
    struct gc_frame_header *h = &rc->rx_frame;
    enum gc_decode_status ds = gc_header_decode(rc->rx_hdr, h);
    if (ds != GC_DECODE_OK) {
        rc_fail(rc, "bad frame from relay: %s", gc_decode_status_str(ds));
        return;
    }
    switch (h->type) {
    case GC_FRAME_DATA: handle_data_header(rc); break;
    case GC_FRAME_ERROR:
        rc->rx_ctrl_have = 0;
        rc->rx_left = h->payload_len;
        if (h->payload_len == 0)
            handle_error_frame(rc);
        else
            rc->rx_state = RX_CTRL;
        break;
    case GC_FRAME_PING: {
        struct gc_frame_header pong = {
            .version = rc->version,
            .type = GC_FRAME_PONG,
            .job_id = rc->job_id,
            .msg_seq = h->msg_seq,
        };
        queue_ctrl(rc, &pong);
        break;
    }
    case GC_FRAME_PONG: break;
    case GC_FRAME_CREDIT:
        /* Sessions are flow-controlled by the relay simply not reading;
         * a grant carries nothing this client must act on. */
        break;
    case GC_FRAME_BYE:
        /* The relay stops here; with work in flight that work is lost,
         * otherwise the session just ends once the socket closes. */
        rc->bye_received = 1;
        if (rc_has_pending(rc))
            rc_lost(rc, "the relay ended the session",
                    "relay closed the session");
        break;
    default:
        rc_fail(rc, "protocol error: unexpected %s frame from relay",
                gc_frame_type_name(h->type));
        break;
    }
}

/* Account for `n` bytes placed by one readv() laid out by rx_pump(). */
static void rx_consume(struct gc_rc *rc, size_t n)
{
    if (rc->rx_state == RX_DATA || rc->rx_state == RX_CTRL) {
        size_t take = n < rc->rx_left ? n : (size_t)rc->rx_left;
        rc->rx_left -= take;
        n -= take;
        if (rc->rx_state == RX_DATA)
            rc->rx_cur->received += take;
        else
            rc->rx_ctrl_have += take;
        if (rc->rx_left > 0)
            return;
        rc->rx_state = RX_HEADER;
        if (rc->rx_frame.type == GC_FRAME_ERROR) {
            handle_error_frame(rc);
            return;
        }
        struct rx_msg *msg = rc->rx_cur;
        rc->rx_cur = NULL;
        if (msg->received == msg->info.msg_len)
            complete_msg(rc, msg);
        if (rc->failed)
            return;
    }
    rc->rx_hdr_have += n;
    if (rc->rx_hdr_have == GC_HEADER_SIZE) {
        rc->rx_hdr_have = 0;
        handle_header(rc);
    }
}

/* Read and dispatch until the socket is drained or the budget is spent;
 * failures are recorded in rc. */
static void rx_pump(struct gc_rc *rc)
{
    size_t budget = RC_READ_BUDGET;
    while (!rc->failed && budget > 0) {
        struct iovec iov[2];
        int niov = 0;
        switch (rc->rx_state) {
        case RX_HEADER:
            iov[niov].iov_base = rc->rx_hdr + rc->rx_hdr_have;
            iov[niov++].iov_len = GC_HEADER_SIZE - rc->rx_hdr_have;
            break;
        case RX_DATA:
            iov[niov].iov_base = rc->rx_cur->buf + rc->rx_cur->received;
            iov[niov++].iov_len = (size_t)rc->rx_left;
            break;
        case RX_CTRL:
            iov[niov].iov_base = rc->rx_ctrl + rc->rx_ctrl_have;
            iov[niov++].iov_len = (size_t)rc->rx_left;
            break;
        }
        if (rc->rx_state != RX_HEADER) {
            /* Whatever follows a payload is the next header. */
            iov[niov].iov_base = rc->rx_hdr;
            iov[niov++].iov_len = GC_HEADER_SIZE;
        }
        ssize_t n = readv(rc->fd, iov, niov);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                rc_lost(rc, strerror(errno), "read from relay failed: %s",
                        strerror(errno));
            return;
        }
        if (n == 0) {
            if (rc->bye_received && !rc_has_pending(rc))
                rc_lost(rc, "the relay ended the session",
                        "relay closed the session");
            else
                rc_lost(rc, "connection closed", "relay closed the connection");
            return;
        }
        budget -= (size_t)n < budget ? (size_t)n : budget;
        rx_consume(rc, (size_t)n);
    }
}

/* ---- progress and close ----------------------------------------------- */

static void tx_flush_or_fail(struct gc_rc *rc)
{
    if (tx_flush(rc) == 0)
        return;
    int saved = errno;
    /* A relay that refuses us writes an ERROR frame and closes; the
     * write then fails with EPIPE.  Its reason is far more useful than
     * "broken pipe", so look for it first. */
    rx_pump(rc);
    rc_lost(rc, strerror(saved), "write to relay failed: %s", strerror(saved));
}

int gc_rc_progress(struct gc_rc *rc, int timeout_ms)
{
    if (rc == NULL)
        return -1;
    if (rc->failed)
        return -1;
    rc->completed = 0;
    int want_out = tx_busy(rc);
    struct pollfd pfd = {.fd = rc->fd, .events = (short)gc_rc_poll_events(rc)};
    int n = poll(&pfd, 1, timeout_ms < 0 ? -1 : timeout_ms);
    if (n < 0) {
        if (errno == EINTR)
            return 0;
        rc_fail(rc, "poll failed: %s", strerror(errno));
        return -1;
    }
    if (n == 0)
        return 0;
    if (pfd.revents & POLLNVAL) {
        rc_fail(rc, "relay socket is no longer open");
        return -1;
    }
    if (want_out && (pfd.revents & (POLLOUT | POLLERR | POLLHUP)))
        tx_flush_or_fail(rc);
    if (!rc->failed && (pfd.revents & (POLLIN | POLLERR | POLLHUP)))
        rx_pump(rc);
    /* Callbacks may have queued replies (or a PING asked for a PONG);
     * sending them now saves the caller a round through poll(). */
    if (!rc->failed && rc->tx_kick && tx_busy(rc))
        tx_flush_or_fail(rc);
    return rc->failed ? -1 : rc->completed;
}

int gc_rc_wait_send(struct gc_rc *rc, struct gc_rc_send *req)
{
    if (rc == NULL || req == NULL)
        return -1;
    while (!req->done) {
        if (gc_rc_progress(rc, -1) < 0)
            return -1;
    }
    return 0;
}

int gc_rc_send(struct gc_rc *rc, uint32_t dst_rank, uint32_t context_id,
               int32_t tag, const void *buf, uint64_t len)
{
    struct gc_rc_send *req = NULL;
    if (gc_rc_isend(rc, dst_rank, context_id, tag, buf, len, &req) != 0)
        return -1;
    int status = gc_rc_wait_send(rc, req);
    /* On failure the request stays queued in rc and is freed with it. */
    gc_rc_send_free(req);
    return status;
}

/* Progress until nothing is left to write, the deadline passes or the
 * session fails; 0 when everything went out. */
static int flush_until(struct gc_rc *rc, uint64_t deadline)
{
    while (tx_busy(rc)) {
        if (gc_rc_progress(rc, ms_until(deadline)) < 0)
            return -1;
        if (tx_busy(rc) && ms_until(deadline) == 0)
            return -1;
    }
    return 0;
}

/* Read and discard until the relay closes or the deadline passes. */
static void drain_input(int fd, uint64_t deadline)
{
    uint8_t sink[16384];
    for (;;) {
        ssize_t n = read(fd, sink, sizeof sink);
        if (n == 0)
            return;
        if (n > 0)
            continue;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return;
        if (wait_fd(fd, POLLIN, deadline) != 0)
            return;
    }
}

int gc_rc_close(struct gc_rc *rc, int timeout_ms)
{
    int status = -1;
    if (rc == NULL)
        return 0;
    if (rc->failed || rc->bye_received) {
        /* Nothing more can be written; "everything went out" is still
         * true when nothing was queued. */
        status = rc->tx_head != NULL ? -1 : 0;
        goto cleanup;
    }
    uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : deadline_after_ms(timeout_ms);
    if (flush_until(rc, deadline) != 0)
        goto cleanup;
    struct gc_frame_header bye = {
        .version = rc->version,
        .type = GC_FRAME_BYE,
        .job_id = rc->job_id,
    };
    /* The flush above left the control queue empty, so BYE fits. */
    queue_ctrl(rc, &bye);
    /* Only write from here on: the relay closes once it reads BYE, and
     * that EOF must not count as a failure. */
    while (tx_busy(rc)) {
        if (tx_flush(rc) != 0 ||
            (tx_busy(rc) && wait_fd(rc->fd, POLLOUT, deadline) != 0))
            goto cleanup;
    }
    status = 0;
    if (shutdown(rc->fd, SHUT_WR) == 0)
        drain_input(rc->fd, deadline != UINT64_MAX
                                ? deadline
                                : deadline_after_ms(RC_CLOSE_LINGER_MS));
cleanup:
    rc_free(rc);
    return status;
}

/* ---- accessors -------------------------------------------------------- */

int gc_rc_fd(const struct gc_rc *rc)
{
    return rc != NULL ? rc->fd : -1;
}

int gc_rc_poll_events(const struct gc_rc *rc)
{
    return rc != NULL ? POLLIN | (tx_busy(rc) ? POLLOUT : 0) : 0;
}

uint64_t gc_rc_pending_bytes(const struct gc_rc *rc)
{
    return rc != NULL ? rc->tx_pending : 0;
}

uint32_t gc_rc_max_chunk(const struct gc_rc *rc)
{
    return rc != NULL ? rc->max_chunk : 0;
}

const char *gc_rc_error(const struct gc_rc *rc)
{
    return rc != NULL ? rc->err : "no session";
}

const char *gc_rc_lost(const struct gc_rc *rc)
{
    return rc != NULL && rc->lost[0] != '\0' ? rc->lost : NULL;
}

int gc_rc_error_code(const struct gc_rc *rc)
{
    return rc != NULL ? rc->err_code : 0;
}
