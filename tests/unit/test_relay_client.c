/*
 * Unit test of the relay client's framing
 * (libgridcoll/relay_client/gc_relay_client.c) against a fake relay written
 * from docs/protocol.md: the frames the client writes (HELLO and AUTH of §5-6,
 * DATA cut as §8.1 says, PONG, BYE), the frames it reads whole or a byte at a
 * time, the sizes it bounds, and each malformed or unexpected frame refused
 * with its error.
 *
 * The client connects only to an endpoint by name, so the fake relay
 * listens on a Unix socket in a temporary directory and a thread of it
 * answers the handshake while gc_rc_connect blocks; after that the test
 * plays the relay on the accepted socket itself, between calls of
 * gc_rc_progress.  Headers are built and checked with common/gc_proto.c,
 * which tests/unit/test_proto.c holds to the document's layout.
 */
#include "gc_proto.h"
#include "gc_relay_client.h"

#include "unit_check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define JOB   7u
#define RANK  3u
#define TOKEN "unit-test token"

static char dir[] = "/tmp/gc_rc_test.XXXXXX";
static char sock_path[sizeof dir + 16];
static int listen_fd = -1;

/* ---- the fake relay's socket ------------------------------------------ */

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_exact(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A frame from the client: 0 with a valid header and its payload (at most
 * `cap` bytes), -1 on EOF, timeout or a header the codec rejects. */
static int read_frame(int fd, struct gc_frame_header *h, uint8_t *payload,
                      size_t cap)
{
    uint8_t raw[GC_HEADER_SIZE];
    if (read_exact(fd, raw, sizeof raw) != 0 ||
        gc_header_decode(raw, h) != GC_DECODE_OK || h->payload_len > cap)
        return -1;
    return read_exact(fd, payload, h->payload_len);
}

static int send_frame(int fd, struct gc_frame_header h, const void *payload)
{
    uint8_t raw[GC_HEADER_SIZE];
    h.version = GC_PROTO_VERSION;
    gc_header_encode(&h, raw);
    return write_all(fd, raw, sizeof raw) != 0 ||
                   (h.payload_len > 0 &&
                    write_all(fd, payload, h.payload_len) != 0)
               ? -1
               : 0;
}

/* The byte of message `seq` from `src` at `offset`. */
static uint8_t pattern(uint32_t src, uint64_t seq, uint64_t offset)
{
    return (uint8_t)(src * 31 + seq * 7 + offset * 13 + (offset >> 8));
}

static void fill(uint8_t *buf, size_t len, uint32_t src, uint64_t seq,
                 uint64_t offset)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(src, seq, offset + i);
}

/* ---- the handshake (§6), answered from a thread ----------------------- */

/* How the fake relay answers. */
enum twist {
    PLAIN,             /* as §6 says */
    REFUSE_HELLO,      /* ERROR auth "no job 7 here" for the HELLO */
    REFUSE_AUTH,       /* ERROR auth "wrong job token" for the AUTH */
    WRONG_PROOF,       /* AUTH_OK whose MAC is not the token's */
    OTHER_RANK_OK,     /* AUTH_OK, valid MAC, naming another rank */
    CLOSE_AFTER_HELLO, /* hangs up instead of answering */
    DATA_FOR_HELLO,    /* a DATA frame where its HELLO belongs */
    CORRUPT_HELLO,     /* its HELLO's header checksum broken */
    CONTROL_BYTES,     /* ERROR for the HELLO, its text with a newline */
};

struct fake_relay {
    enum twist twist;
    struct gc_hello hello; /* what its HELLO announces (nonce set here) */
    /* what it saw */
    int saw_hello, saw_auth; /* valid frames of those types */
    struct gc_frame_header client_hello_hdr, auth_hdr;
    struct gc_hello client_hello;
    int auth_mac_ok; /* the proof §6 prescribes for our nonces */
    int fd;          /* the accepted socket, -1 if none */
};

static struct gc_hello relay_hello(uint32_t max_chunk, uint32_t stream_count)
{
    struct gc_hello h = {
        .version_min = GC_PROTO_VERSION,
        .version_max = GC_PROTO_VERSION,
        .capabilities = GC_CAPS_ALL,
        .role = GC_ROLE_RELAY,
        .stream_count = stream_count,
        .max_chunk = max_chunk,
        .epoch = 99,
    };
    snprintf(h.name, sizeof h.name, "fake");
    return h;
}

static void *answer_handshake(void *arg)
{
    struct fake_relay *f = arg;
    struct pollfd pfd = {.fd = listen_fd, .events = POLLIN};
    if (poll(&pfd, 1, 2000) != 1)
        return NULL;
    f->fd = accept(listen_fd, NULL, NULL);
    if (f->fd < 0)
        return NULL;
    /* A client that stops talking fails the test, not hangs it. */
    struct timeval limit = {.tv_sec = 2};
    setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(f->fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);

    uint8_t payload[GC_MAX_CONTROL_PAYLOAD];
    struct gc_frame_header *h = &f->client_hello_hdr;
    if (read_frame(f->fd, h, payload, sizeof payload) != 0 ||
        h->type != GC_FRAME_HELLO ||
        gc_hello_decode(payload, h->payload_len, &f->client_hello) != 0)
        return NULL;
    f->saw_hello = 1;

    struct gc_frame_header answer = {.type = GC_FRAME_HELLO,
                                     .job_id = JOB,
                                     .src_rank = h->src_rank,
                                     .payload_len = GC_HELLO_SIZE};
    uint8_t hello[GC_HELLO_SIZE];
    gc_random_bytes(f->hello.nonce, sizeof f->hello.nonce);
    gc_hello_encode(&f->hello, hello, sizeof hello);
    switch (f->twist) {
    case REFUSE_HELLO:
    case CONTROL_BYTES: {
        const char *text =
            f->twist == REFUSE_HELLO ? "no job 7 here" : "bad\ntoken\x7f!";
        send_frame(
            f->fd,
            (struct gc_frame_header){.type = GC_FRAME_ERROR,
                                     .job_id = JOB,
                                     .tag = GC_ERR_AUTH,
                                     .payload_len = (uint32_t)strlen(text)},
            text);
        return NULL;
    }
    case CLOSE_AFTER_HELLO: shutdown(f->fd, SHUT_WR); return NULL;
    case DATA_FOR_HELLO:
        send_frame(f->fd,
                   (struct gc_frame_header){.type = GC_FRAME_DATA,
                                            .job_id = JOB,
                                            .dst_rank = RANK,
                                            .flags = GC_FLAG_LAST_CHUNK},
                   NULL);
        return NULL;
    case CORRUPT_HELLO: {
        uint8_t raw[GC_HEADER_SIZE];
        answer.version = GC_PROTO_VERSION;
        gc_header_encode(&answer, raw);
        raw[8] ^= 0x01; /* job_id, under the checksum */
        write_all(f->fd, raw, sizeof raw);
        write_all(f->fd, hello, sizeof hello);
        return NULL;
    }
    default: break;
    }
    if (send_frame(f->fd, answer, hello) != 0)
        return NULL;

    h = &f->auth_hdr;
    if (read_frame(f->fd, h, payload, sizeof payload) != 0 ||
        h->type != GC_FRAME_AUTH || h->payload_len != GC_MAC_SIZE)
        return NULL;
    f->saw_auth = 1;
    uint8_t mac[GC_MAC_SIZE];
    gc_auth_mac((const uint8_t *)TOKEN, strlen(TOKEN), GC_AUTH_LABEL_INITIATOR,
                f->client_hello.nonce, f->hello.nonce, h->src_rank, mac);
    f->auth_mac_ok = memcmp(mac, payload, GC_MAC_SIZE) == 0;

    if (f->twist == REFUSE_AUTH) {
        send_frame(f->fd,
                   (struct gc_frame_header){.type = GC_FRAME_ERROR,
                                            .job_id = JOB,
                                            .tag = GC_ERR_AUTH,
                                            .payload_len = 15},
                   "wrong job token");
        return NULL;
    }
    gc_auth_mac((const uint8_t *)TOKEN, strlen(TOKEN), GC_AUTH_LABEL_RESPONDER,
                f->client_hello.nonce, f->hello.nonce, h->src_rank, mac);
    if (f->twist == WRONG_PROOF)
        mac[0] ^= 0x80;
    send_frame(f->fd,
               (struct gc_frame_header){.type = GC_FRAME_AUTH_OK,
                                        .job_id = JOB,
                                        .src_rank = h->src_rank +
                                                    (f->twist == OTHER_RANK_OK),
                                        .payload_len = GC_MAC_SIZE},
               mac);
    return NULL;
}

/* ---- the client's end ------------------------------------------------- */

#define INBOX_MAX 8
static struct inbox {
    int count;
    struct gc_rc_msg_info info[INBOX_MAX];
    uint8_t *data[INBOX_MAX];
    int library_allocated[INBOX_MAX];
} inbox;
static uint8_t caller_buffer[4096]; /* for messages with tag 42 */

static void *on_alloc(void *arg, const struct gc_rc_msg_info *info)
{
    (void)arg;
    return info->tag == 42 && info->msg_len <= sizeof caller_buffer
               ? caller_buffer
               : NULL;
}

static void on_complete(void *arg, const struct gc_rc_msg_info *info, void *buf,
                        int library_allocated)
{
    (void)arg;
    if (inbox.count == INBOX_MAX) {
        CHECKF(0, "more than %d messages", INBOX_MAX);
        return;
    }
    inbox.info[inbox.count] = *info;
    inbox.data[inbox.count] = buf;
    inbox.library_allocated[inbox.count] = library_allocated;
    inbox.count++;
}

static void inbox_clear(void)
{
    for (int i = 0; i < inbox.count; i++)
        if (inbox.library_allocated[i])
            free(inbox.data[i]);
    memset(&inbox, 0, sizeof inbox);
}

/* Connect to a fake relay answering as `f` says; the session, or NULL
 * with the client's reason in `err`. */
static struct gc_rc *connect_to(struct fake_relay *f, char *err, size_t len)
{
    f->fd = -1;
    pthread_t relay;
    if (pthread_create(&relay, NULL, answer_handshake, f) != 0) {
        snprintf(err, len, "no thread for the fake relay");
        return NULL;
    }
    struct gc_rc_options opt = {
        .endpoint = sock_path,
        .token = (const uint8_t *)TOKEN,
        .token_len = strlen(TOKEN),
        .job_id = JOB,
        .rank = RANK,
        .connect_timeout_ms = 2000,
        .on_alloc = on_alloc,
        .on_complete = on_complete,
    };
    struct gc_rc *rc = NULL;
    err[0] = '\0';
    if (gc_rc_connect(&opt, &rc, err, len) != 0)
        rc = NULL;
    pthread_join(relay, NULL);
    return rc;
}

static void hang_up(struct fake_relay *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* A session with a relay as §6 says, announcing `max_chunk` and
 * `stream_count`; NULL (a failed check) if it does not come up. */
static struct gc_rc *open_session(struct fake_relay *f, uint32_t max_chunk,
                                  uint32_t stream_count)
{
    *f = (struct fake_relay){.twist = PLAIN,
                             .hello = relay_hello(max_chunk, stream_count)};
    char err[512];
    struct gc_rc *rc = connect_to(f, err, sizeof err);
    if (rc == NULL) {
        CHECKF(0, "connect: %s", err);
        hang_up(f);
    }
    return rc;
}

static void end_session(struct gc_rc *rc, struct fake_relay *f)
{
    gc_rc_close(rc, 0);
    hang_up(f);
}

/* gc_rc_progress until the session fails (at most a second): -1 then. */
static int progress_until_failed(struct gc_rc *rc)
{
    for (int i = 0; i < 100; i++)
        if (gc_rc_progress(rc, 10) < 0)
            return -1;
    return 0;
}

/* ---- §5-6: what the client sends, what it accepts --------------------- */

static void handshake_frames(void)
{
    struct fake_relay f;
    struct gc_rc *rc = open_session(&f, 4096, 0);
    CHECKF(f.saw_hello && f.saw_auth, "frames seen: HELLO %d, AUTH %d",
           f.saw_hello, f.saw_auth);
    const struct gc_frame_header *h = &f.client_hello_hdr;
    /* §5.1: the HELLO header speaks the initiator's lowest version. */
    CHECKF(h->version == GC_PROTO_VERSION_MIN && h->job_id == JOB &&
               h->src_rank == RANK && h->payload_len == GC_HELLO_SIZE,
           "HELLO header: version %u, job %u, rank %u, %u bytes", h->version,
           h->job_id, h->src_rank, h->payload_len);
    const struct gc_hello *ch = &f.client_hello;
    static const uint8_t zero_nonce[GC_NONCE_SIZE];
    CHECKF(ch->version_min == GC_PROTO_VERSION_MIN &&
               ch->version_max == GC_PROTO_VERSION &&
               ch->role == GC_ROLE_RANK && ch->capabilities == GC_CAP_CREDIT &&
               ch->stream_index == 0 && ch->stream_count == 0 &&
               ch->max_chunk == 0 && ch->epoch == 0 && ch->credit == 0 &&
               memcmp(ch->nonce, zero_nonce, GC_NONCE_SIZE) != 0,
           "HELLO payload: versions %u..%u, role %u, caps %#x, stream %u/%u, "
           "chunk %u, epoch %llu, credit %llu",
           ch->version_min, ch->version_max, ch->role, ch->capabilities,
           ch->stream_index, ch->stream_count, ch->max_chunk,
           (unsigned long long)ch->epoch, (unsigned long long)ch->credit);
    h = &f.auth_hdr;
    CHECKF(h->version == GC_PROTO_VERSION && h->src_rank == RANK &&
               h->job_id == JOB && f.auth_mac_ok,
           "AUTH: version %u, rank %u, job %u, proof %s", h->version,
           h->src_rank, h->job_id, f.auth_mac_ok ? "right" : "wrong");
    CHECKF(gc_rc_max_chunk(rc) == 4096, "max_chunk %u", gc_rc_max_chunk(rc));
    uint8_t first_nonce[GC_NONCE_SIZE];
    memcpy(first_nonce, ch->nonce, sizeof first_nonce);
    end_session(rc, &f);

    /* §5.2: a fresh nonce for every connection. */
    char err[512];
    rc = connect_to(&f, err, sizeof err);
    CHECKF(rc != NULL && memcmp(first_nonce, ch->nonce, GC_NONCE_SIZE) != 0,
           "second connection: %s, nonce %s", rc != NULL ? "up" : err,
           rc != NULL ? "repeated" : "-");
    end_session(rc, &f);
}

static void handshake_refusals(void)
{
    struct gc_hello other_role = relay_hello(4096, 0);
    other_role.role = GC_ROLE_RANK;
    struct gc_hello two_versions = relay_hello(4096, 0);
    two_versions.version_max = 2;
    struct gc_hello future = relay_hello(4096, 0);
    future.version_min = future.version_max = 2;
    const struct {
        enum twist twist;
        struct gc_hello hello;
        const char *error;
    } cases[] = {
        {REFUSE_HELLO, relay_hello(4096, 0),
         "relay refused: auth: no job 7 here"},
        {CONTROL_BYTES, relay_hello(4096, 0),
         "relay refused: auth: bad?token?!"},
        {REFUSE_AUTH, relay_hello(4096, 0),
         "relay refused: auth: wrong job token"},
        {WRONG_PROOF, relay_hello(4096, 0),
         "relay failed to prove the job token"},
        {OTHER_RANK_OK, relay_hello(4096, 0),
         "relay failed to prove the job token"},
        {CLOSE_AFTER_HELLO, relay_hello(4096, 0),
         "relay closed the connection during the handshake"},
        {DATA_FOR_HELLO, relay_hello(4096, 0),
         "protocol error: relay sent DATA during the handshake, expected "
         "HELLO"},
        {CORRUPT_HELLO, relay_hello(4096, 0),
         "bad frame from relay during handshake: header checksum mismatch"},
        {PLAIN, other_role, "protocol error: endpoint is not a relay (role 1)"},
        {PLAIN, two_versions,
         "protocol error: relay chose version 1..2, we speak 1..1"},
        {PLAIN, future,
         "protocol error: relay chose version 2..2, we speak 1..1"},
        {PLAIN, relay_hello(0, 0),
         "protocol error: relay announced chunk size 0 (must be "
         "1..16777216)"},
        {PLAIN, relay_hello(GC_MAX_PAYLOAD + 1, 0),
         "protocol error: relay announced chunk size 16777217 (must be "
         "1..16777216)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fake_relay f = {.twist = cases[i].twist,
                               .hello = cases[i].hello};
        char err[512];
        struct gc_rc *rc = connect_to(&f, err, sizeof err);
        CHECKF(rc == NULL && strcmp(err, cases[i].error) == 0,
               "case %zu: %s '%s', expected '%s'", i,
               rc != NULL ? "connected," : "refused:", err, cases[i].error);
        end_session(rc, &f);
    }
}

/* ---- §8.1: how the client cuts and numbers messages ------------------- */

/* Read the DATA frames of one message and check them against §8.1: chunks
 * of `chunk` bytes but the last, consecutive offsets, LAST_CHUNK on the
 * last only, the envelope in every one, no link_seq, the bytes sent. */
static void expect_message(int line, int fd, uint32_t dst, int32_t tag,
                           uint64_t seq, uint64_t len, uint32_t chunk)
{
    static uint8_t payload[1 << 17]; /* the largest message sent */
    uint64_t offset = 0;
    do {
        struct gc_frame_header h;
        if (read_frame(fd, &h, payload, sizeof payload) != 0) {
            CHECK_AT(0, line, "no valid frame at offset %llu",
                     (unsigned long long)offset);
            return;
        }
        uint64_t want = len - offset < chunk ? len - offset : chunk;
        int last = offset + want == len;
        CHECK_AT(
            h.type == GC_FRAME_DATA && h.src_rank == RANK &&
                h.dst_rank == dst && h.job_id == JOB && h.tag == tag &&
                h.context_id == 9 && h.msg_seq == seq && h.msg_len == len &&
                h.chunk_offset == offset && h.payload_len == want &&
                h.link_seq == 0 && h.flags == (last ? GC_FLAG_LAST_CHUNK : 0),
            line,
            "frame at %llu: type %u, %u->%u, tag %d, context %u, seq "
            "%llu, msg_len %llu, offset %llu, %u bytes, flags %#x, "
            "link_seq %llu",
            (unsigned long long)offset, h.type, h.src_rank, h.dst_rank, h.tag,
            h.context_id, (unsigned long long)h.msg_seq,
            (unsigned long long)h.msg_len, (unsigned long long)h.chunk_offset,
            h.payload_len, h.flags, (unsigned long long)h.link_seq);
        int same = 1;
        for (uint32_t i = 0; i < h.payload_len && same; i++)
            same = payload[i] == pattern(RANK, seq, offset + i);
        CHECK_AT(same, line, "payload at %llu differs",
                 (unsigned long long)offset);
        offset += h.payload_len;
        if (h.payload_len == 0 || h.payload_len != want)
            break;
    } while (offset < len);
}

static int send_pattern(struct gc_rc *rc, uint32_t dst, int32_t tag,
                        uint64_t seq, uint64_t len)
{
    static uint8_t buf[1 << 17];
    fill(buf, (size_t)len, RANK, seq, 0);
    return gc_rc_send(rc, dst, 9, tag, buf, len);
}

static void cutting_and_numbering(void)
{
    struct fake_relay f;
    struct gc_rc *rc = open_session(&f, 4096, 0);
    if (rc == NULL)
        return;
    CHECKF(send_pattern(rc, 5, 11, 0, 10000) == 0, "send: %s", gc_rc_error(rc));
    expect_message(__LINE__, f.fd, 5, 11, 0, 10000, 4096);
    /* msg_seq counts per destination. */
    CHECKF(send_pattern(rc, 5, 12, 1, 4096) == 0, "send: %s", gc_rc_error(rc));
    expect_message(__LINE__, f.fd, 5, 12, 1, 4096, 4096);
    CHECKF(send_pattern(rc, 6, -3, 0, 1) == 0, "send: %s", gc_rc_error(rc));
    expect_message(__LINE__, f.fd, 6, -3, 0, 1, 4096);
    /* A 0-byte message is one DATA of no payload, with LAST_CHUNK. */
    CHECKF(gc_rc_send(rc, 5, 9, 0, NULL, 0) == 0, "send: %s", gc_rc_error(rc));
    expect_message(__LINE__, f.fd, 5, 0, 2, 0, 4096);

    /* Out of the protocol's bounds: refused, the session goes on. */
    struct gc_rc_send *req = NULL;
    uint8_t byte = 0;
    errno = 0;
    CHECKF(gc_rc_isend(rc, GC_MAX_RANK + 1, 9, 0, &byte, 1, &req) == -1 &&
               errno == EINVAL,
           "rank beyond GC_MAX_RANK: errno %d", errno);
    errno = 0;
    CHECKF(gc_rc_isend(rc, 5, 9, 0, &byte, GC_MAX_MESSAGE + 1, &req) == -1 &&
               errno == EINVAL,
           "message beyond GC_MAX_MESSAGE: errno %d", errno);
    CHECKF(send_pattern(rc, 5, 1, 3, 100) == 0 && gc_rc_error(rc)[0] == '\0',
           "after the refusals: %s", gc_rc_error(rc));
    expect_message(__LINE__, f.fd, 5, 1, 3, 100, 4096);

    /* BYE on close (§11), then the client's end of the stream.  Our side
     * says it is done first, so the client need not wait for it. */
    shutdown(f.fd, SHUT_WR);
    CHECKF(gc_rc_close(rc, 1000) == 0, "close failed");
    struct gc_frame_header h;
    uint8_t rest;
    CHECKF(read_frame(f.fd, &h, NULL, 0) == 0 && h.type == GC_FRAME_BYE &&
               h.job_id == JOB && h.payload_len == 0 &&
               recv(f.fd, &rest, 1, 0) == 0,
           "no BYE then end of stream: type %u", h.type);
    hang_up(&f);
}

/* A relay with K streams: a message that fits in fewer than K chunks gets
 * one per stream, in whole pages, never above max_chunk (§8.1 item 2). */
static void cutting_for_streams(void)
{
    struct fake_relay f;
    struct gc_rc *rc = open_session(&f, 16384, 4);
    if (rc == NULL)
        return;
    const struct {
        uint64_t len;
        uint32_t chunk;
    } cases[] = {
        {10000, 4096},  /* 2500 a stream: one page */
        {40000, 12288}, /* 10000 a stream: three pages */
        {100, 4096},    /* never less than a page */
        {65536, 16384}, /* four full chunks */
        {70000, 16384}  /* more than K chunks: max_chunk */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECKF(send_pattern(rc, 5, 0, i, cases[i].len) == 0, "send %zu: %s", i,
               gc_rc_error(rc));
        expect_message(__LINE__, f.fd, 5, 0, i, cases[i].len, cases[i].chunk);
    }
    end_session(rc, &f);
}

/*
 * A socket that takes a few KiB at a time: the client's writes stop inside
 * payloads, and inside headers where bulk and small messages (most of
 * them empty: header only) alternate, and it must go on from that very
 * byte.  A PING
 * arriving meanwhile is answered by a PONG between two frames, never inside one
 * (§7: frames follow each other whole).
 */
#define MESSAGES 210 /* every 21st bulk */
static void short_writes(void)
{
    struct fake_relay f;
    struct gc_rc *rc = open_session(&f, 4096, 0);
    if (rc == NULL)
        return;
    int small = 4096;
    setsockopt(gc_rc_fd(rc), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    /* Bulk messages to rank 5, small ones (copied: 0..32 bytes) to 7. */
    struct {
        uint32_t dst;
        uint64_t seq;
        size_t len;
        struct gc_rc_send *req;
    } msgs[MESSAGES];
    static uint8_t bulk[MESSAGES / 21][20000], scratch[32];
    size_t n = 0, total = GC_HEADER_SIZE; /* the PONG */
    int frames_sent = 1;
    uint64_t next_seq[2] = {0, 0};
    for (int i = 0; i < MESSAGES; i++, n++) {
        int is_bulk = i % 21 == 0;
        msgs[n].dst = is_bulk ? 5 : 7;
        msgs[n].seq = next_seq[!is_bulk]++;
        msgs[n].len = i == 0       ? 20000
                      : is_bulk    ? 5000 + 7 * (size_t)i
                      : i % 4 == 0 ? (size_t)(i % 33)
                                   : 0;
        uint8_t *buf = is_bulk ? bulk[msgs[n].seq] : scratch;
        fill(buf, msgs[n].len, RANK, msgs[n].seq, 0);
        gc_rc_isend(rc, msgs[n].dst, 9, 1, buf, msgs[n].len, &msgs[n].req);
        int frames = msgs[n].len == 0 ? 1 : (int)((msgs[n].len + 4095) / 4096);
        frames_sent += frames;
        total += (size_t)frames * GC_HEADER_SIZE + msgs[n].len;
        if (i == 0) {
            uint64_t pending = gc_rc_pending_bytes(rc);
            CHECKF(pending > 0 && pending < total,
                   "%llu bytes pending after the first write: not a short "
                   "one",
                   (unsigned long long)pending);
            send_frame(f.fd,
                       (struct gc_frame_header){.type = GC_FRAME_PING,
                                                .job_id = JOB,
                                                .msg_seq = 0xfeed},
                       NULL);
        }
    }

    static uint8_t stream[128 * 1024];
    size_t have = 0;
    fcntl(f.fd, F_SETFL, fcntl(f.fd, F_GETFL) | O_NONBLOCK);
    for (int i = 0; i < 1000 && have < total; i++) {
        if (gc_rc_progress(rc, 10) < 0)
            break;
        ssize_t got;
        while ((got = recv(f.fd, stream + have, sizeof stream - have, 0)) > 0)
            have += (size_t)got;
    }
    int done = 1;
    for (size_t i = 0; i < n; i++)
        done &= gc_rc_send_done(msgs[i].req);
    CHECKF(have == total && done && gc_rc_pending_bytes(rc) == 0,
           "%zu of %zu bytes, all done %d, %llu pending (%s)", have, total,
           done, (unsigned long long)gc_rc_pending_bytes(rc), gc_rc_error(rc));

    /* Walk the stream frame by frame: each message's chunks in order, its
     * bytes, then the next message to that rank. */
    size_t next = 0; /* message whose chunks come, per rank in send order */
    uint64_t offset[8] = {0};
    size_t msg_of[8] = {0};
    int pongs = 0, frames = 0, wrong = 0;
    for (size_t at = 0; at + GC_HEADER_SIZE <= have;) {
        struct gc_frame_header h;
        enum gc_decode_status ds = gc_header_decode(stream + at, &h);
        if (ds != GC_DECODE_OK) {
            CHECKF(0, "byte %zu: %s", at, gc_decode_status_str(ds));
            break;
        }
        const uint8_t *p = stream + at + GC_HEADER_SIZE;
        frames++;
        at += GC_HEADER_SIZE + h.payload_len;
        if (h.type == GC_FRAME_PONG) {
            pongs += h.msg_seq == 0xfeed && h.job_id == JOB;
            continue;
        }
        uint32_t d = h.dst_rank & 7;
        while (msg_of[d] < n && msgs[msg_of[d]].dst != h.dst_rank)
            msg_of[d]++;
        if (msg_of[d] == n) {
            wrong++;
            continue;
        }
        size_t m = msg_of[d];
        wrong += h.msg_seq != msgs[m].seq || h.chunk_offset != offset[d] ||
                 h.msg_len != msgs[m].len;
        for (uint32_t i = 0; i < h.payload_len; i++)
            wrong += p[i] != pattern(RANK, h.msg_seq, h.chunk_offset + i);
        offset[d] += h.payload_len;
        if (h.flags & GC_FLAG_LAST_CHUNK) {
            offset[d] = 0;
            msg_of[d]++;
            next++;
        }
    }
    CHECKF(next == n && pongs == 1 && wrong == 0 && frames == frames_sent,
           "%zu of %zu messages, %d frames, %d PONGs, %d wrong", next, n,
           frames, pongs, wrong);
    for (size_t i = 0; i < n; i++)
        gc_rc_send_free(msgs[i].req);
    end_session(rc, &f);
}

/* ---- what the client reads -------------------------------------------- */

/* Append a frame to `out` (at `*len`), its DATA payload from pattern(). */
static void put_frame(uint8_t *out, size_t *len, struct gc_frame_header h)
{
    h.version = GC_PROTO_VERSION;
    gc_header_encode(&h, out + *len);
    *len += GC_HEADER_SIZE;
    fill(out + *len, h.payload_len, h.src_rank, h.msg_seq, h.chunk_offset);
    *len += h.payload_len;
}

static struct gc_frame_header data(uint32_t src, int32_t tag, uint64_t seq,
                                   uint64_t msg_len, uint64_t offset,
                                   uint32_t payload)
{
    return (struct gc_frame_header){
        .type = GC_FRAME_DATA,
        .flags = offset + payload == msg_len ? GC_FLAG_LAST_CHUNK : 0,
        .job_id = JOB,
        .src_rank = src,
        .dst_rank = RANK,
        .context_id = 9,
        .tag = tag,
        .payload_len = payload,
        .msg_seq = seq,
        .msg_len = msg_len,
        .chunk_offset = offset,
    };
}

static int holds_pattern(const uint8_t *buf, uint64_t len, uint32_t src,
                         uint64_t seq)
{
    for (uint64_t i = 0; i < len; i++)
        if (buf[i] != pattern(src, seq, i))
            return 0;
    return 1;
}

/*
 * Chunks of messages from two sources, interleaved (§8.1 item 5), one of
 * them larger than the relay's max_chunk (item 6), a 0-byte message, a
 * message into the caller's buffer, and a CREDIT the client ignores (§7):
 * delivered once in a single write, once a byte at a time.  Each message
 * completes exactly when its last byte is in, with its bytes and envelope.
 */
static void reading(int bytewise)
{
    struct fake_relay f;
    struct gc_rc *rc = open_session(&f, 4096, 0);
    if (rc == NULL)
        return;
    static uint8_t stream[64 * 1024];
    size_t len = 0;
    size_t ends[INBOX_MAX]; /* stream length when each message is whole */
    put_frame(stream, &len, data(1, 5, 0, 10000, 0, 4096));
    put_frame(stream, &len, data(2, 6, 0, 5, 0, 5));
    ends[0] = len;
    put_frame(stream, &len,
              (struct gc_frame_header){.type = GC_FRAME_CREDIT,
                                       .job_id = JOB,
                                       .dst_rank = RANK,
                                       .msg_len = 1u << 20});
    put_frame(stream, &len, data(1, 5, 0, 10000, 4096, 5904));
    ends[1] = len;
    put_frame(stream, &len, data(2, 7, 1, 0, 0, 0));
    ends[2] = len;
    put_frame(stream, &len, data(1, 42, 1, 3000, 0, 1000));
    put_frame(stream, &len, data(1, 42, 1, 3000, 1000, 2000));
    ends[3] = len;

    int completed_at[INBOX_MAX];
    for (size_t at = 0; at < len;) {
        size_t piece = bytewise ? 1 : len;
        write_all(f.fd, stream + at, piece);
        at += piece;
        int before = inbox.count;
        if (gc_rc_progress(rc, 1000) < 0) {
            CHECKF(0, "at byte %zu: %s", at, gc_rc_error(rc));
            break;
        }
        for (int i = before; i < inbox.count; i++)
            completed_at[i] = (int)at;
    }
    static const struct {
        uint32_t src;
        int32_t tag;
        uint64_t seq, len;
        int library_allocated;
    } want[] = {{2, 6, 0, 5, 1},
                {1, 5, 0, 10000, 1},
                {2, 7, 1, 0, 1},
                {1, 42, 1, 3000, 0}};
    CHECKF(inbox.count == 4, "%d messages", inbox.count);
    for (int i = 0; i < inbox.count && i < 4; i++) {
        const struct gc_rc_msg_info *m = &inbox.info[i];
        CHECKF(
            m->src_rank == want[i].src && m->dst_rank == RANK &&
                m->context_id == 9 && m->tag == want[i].tag &&
                m->msg_seq == want[i].seq && m->msg_len == want[i].len &&
                inbox.library_allocated[i] == want[i].library_allocated &&
                (want[i].library_allocated || inbox.data[i] == caller_buffer) &&
                holds_pattern(inbox.data[i], m->msg_len, m->src_rank,
                              m->msg_seq),
            "message %d: %u->%u, context %u, tag %d, seq %llu, %llu bytes, "
            "library buffer %d",
            i, m->src_rank, m->dst_rank, m->context_id, m->tag,
            (unsigned long long)m->msg_seq, (unsigned long long)m->msg_len,
            inbox.library_allocated[i]);
        if (bytewise)
            CHECKF(completed_at[i] == (int)ends[i],
                   "message %d complete at byte %d, its end is at %zu", i,
                   completed_at[i], ends[i]);
    }
    inbox_clear();
    end_session(rc, &f);
}

/* A PING is answered by a PONG echoing its value, nothing else set. */
static void ping_pong(void)
{
    struct fake_relay f;
    struct gc_rc *rc = open_session(&f, 4096, 0);
    if (rc == NULL)
        return;
    send_frame(f.fd,
               (struct gc_frame_header){.type = GC_FRAME_PING,
                                        .job_id = JOB,
                                        .msg_seq = 0x0123456789abcdefull},
               NULL);
    gc_rc_progress(rc, 1000);
    struct gc_frame_header h;
    const struct gc_frame_header want = {.version = GC_PROTO_VERSION,
                                         .type = GC_FRAME_PONG,
                                         .job_id = JOB,
                                         .msg_seq = 0x0123456789abcdefull};
    CHECKF(read_frame(f.fd, &h, NULL, 0) == 0 && gc_header_equal(&h, &want),
           "PONG: type %u, seq %llx", h.type, (unsigned long long)h.msg_seq);
    end_session(rc, &f);
}

/* A header-only frame (or one of `payload_len` bytes) of `type`. */
static struct gc_frame_header control(uint8_t type, int32_t tag,
                                      uint32_t payload_len)
{
    return (struct gc_frame_header){
        .type = type, .job_id = JOB, .tag = tag, .payload_len = payload_len};
}

/* A whole one-byte message from rank 1 to `dst` of `job`. */
static struct gc_frame_header addressed(uint32_t dst, uint32_t job)
{
    struct gc_frame_header h = data(1, 0, 0, 1, 0, 1);
    h.dst_rank = dst;
    h.job_id = job;
    return h;
}

/* What kills a session, and the error it leaves (§4, §7, §8.1, §12). */
enum damage { INTACT, MAGIC, CHECKSUM };
static void refused_frames(void)
{
    const struct gc_frame_header none = {0},
                                 half = data(1, 0, 0, 8192, 0, 2048);
    const struct {
        const char *what;
        struct gc_frame_header before; /* type 0: nothing first */
        struct gc_frame_header frame;  /* type 0: the relay hangs up */
        enum damage damage;
        const char *text; /* ERROR's payload */
        const char *error, *lost;
        int code;
    } cases[] = {
        {"bad magic", none, control(GC_FRAME_PING, 0, 0), MAGIC, NULL,
         "bad frame from relay: bad magic", NULL, 0},
        {"bad checksum", none, control(GC_FRAME_PING, 0, 0), CHECKSUM, NULL,
         "bad frame from relay: header checksum mismatch", NULL, 0},
        {"DATA beyond GC_MAX_PAYLOAD", none,
         data(1, 0, 0, GC_MAX_PAYLOAD + 1, 0, GC_MAX_PAYLOAD + 1), INTACT, NULL,
         "bad frame from relay: payload length out of range", NULL, 0},
        {"ERROR beyond GC_MAX_CONTROL_PAYLOAD", none,
         control(GC_FRAME_ERROR, GC_ERR_AUTH, GC_MAX_CONTROL_PAYLOAD + 1),
         INTACT, NULL, "bad frame from relay: payload length out of range",
         NULL, 0},
        {"DATA for another rank", none, addressed(4, JOB), INTACT, NULL,
         "protocol error: relay delivered a message for rank 4 of job 7 to "
         "rank 3 of job 7",
         NULL, 0},
        {"DATA for another job", none, addressed(RANK, 8), INTACT, NULL,
         "protocol error: relay delivered a message for rank 3 of job 8 to "
         "rank 3 of job 7",
         NULL, 0},
        {"first chunk not at 0", none, data(1, 0, 5, 200, 100, 100), INTACT,
         NULL,
         "protocol error: chunk at offset 100 of unknown message 5 from rank "
         "1",
         NULL, 0},
        {"a chunk skipped", half, data(1, 0, 0, 8192, 4096, 2048), INTACT, NULL,
         "protocol error: chunk at offset 4096 of message 0 from rank 1, "
         "expected offset 2048",
         NULL, 0},
        {"a chunk of another tag", half, data(1, 1, 0, 8192, 2048, 2048),
         INTACT, NULL,
         "protocol error: chunk of message 0 from rank 1 disagrees with its "
         "first chunk (length, context or tag)",
         NULL, 0},
        {"ACK on a session", none, control(GC_FRAME_ACK, 0, 0), INTACT, NULL,
         "protocol error: unexpected ACK frame from relay", NULL, 0},
        {"HELLO after the handshake", none,
         control(GC_FRAME_HELLO, 0, GC_HELLO_SIZE), INTACT, NULL,
         "protocol error: unexpected HELLO frame from relay", NULL, 0},
        {"ERROR", none, control(GC_FRAME_ERROR, GC_ERR_AUTH, 7), INTACT,
         "go away", "relay error auth: go away", NULL, GC_ERR_AUTH},
        {"ERROR shutdown", none, control(GC_FRAME_ERROR, GC_ERR_SHUTDOWN, 22),
         INTACT, "relay is shutting down",
         "relay error shutdown: relay is shutting down",
         "relay is shutting down", GC_ERR_SHUTDOWN},
        {"ERROR with control bytes", none,
         control(GC_FRAME_ERROR, GC_ERR_PROTOCOL, 9), INTACT, "line\none\x7f",
         "relay error protocol: line?one?", NULL, GC_ERR_PROTOCOL},
        {"hang-up", none, none, INTACT, NULL, "relay closed the connection",
         "connection closed", 0},
        {"BYE inside a message", half, control(GC_FRAME_BYE, 0, 0), INTACT,
         NULL, "relay closed the session", "the relay ended the session", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fake_relay f;
        struct gc_rc *rc = open_session(&f, 4096, 0);
        if (rc == NULL)
            continue;
        uint8_t out[GC_HEADER_SIZE + 8192];
        size_t len = 0;
        if (cases[i].before.type != 0)
            put_frame(out, &len, cases[i].before);
        struct gc_frame_header h = cases[i].frame;
        if (h.type != 0) {
            h.version = GC_PROTO_VERSION;
            gc_header_encode(&h, out + len);
            if (cases[i].damage == MAGIC)
                out[len] = 'X';
            if (cases[i].damage == CHECKSUM)
                out[len + 20] ^= 0x04; /* context_id */
            len += GC_HEADER_SIZE;
            /* The oversized payloads are refused by their header alone. */
            if (cases[i].text != NULL) {
                memcpy(out + len, cases[i].text, h.payload_len);
                len += h.payload_len;
            } else if (h.payload_len <= sizeof out - len) {
                memset(out + len, 0, h.payload_len);
                len += h.payload_len;
            }
        }
        write_all(f.fd, out, len);
        if (h.type == 0)
            shutdown(f.fd, SHUT_WR);
        int ended = progress_until_failed(rc) == -1;
        const char *lost = gc_rc_lost(rc);
        CHECKF(ended && strcmp(gc_rc_error(rc), cases[i].error) == 0 &&
                   (cases[i].lost == NULL
                        ? lost == NULL
                        : lost != NULL && strcmp(lost, cases[i].lost) == 0) &&
                   gc_rc_error_code(rc) == cases[i].code,
               "%s: %s '%s', lost '%s', code %d", cases[i].what,
               ended ? "failed with" : "still up,", gc_rc_error(rc),
               lost != NULL ? lost : "(none)", gc_rc_error_code(rc));
        CHECKF(inbox.count == 0, "%s: %d messages delivered", cases[i].what,
               inbox.count);
        inbox_clear();
        end_session(rc, &f);
    }
}

int main(void)
{
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(sock_path, sizeof sock_path, "%s/relay.sock", dir);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock_path);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0 ||
        bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(listen_fd, 4) != 0) {
        perror("fake relay socket");
        return 1;
    }
    handshake_frames();
    handshake_refusals();
    cutting_and_numbering();
    cutting_for_streams();
    short_writes();
    reading(0);
    reading(1);
    ping_pong();
    refused_frames();
    close(listen_fd);
    unlink(sock_path);
    rmdir(dir);
    return unit_check_report("relay_client: ");
}
