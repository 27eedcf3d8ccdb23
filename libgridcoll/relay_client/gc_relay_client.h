/*
 * Relay client: one rank's session with its site relay.  Usable without
 * MPI; libgridcoll's MPI layer is built on it.
 *
 * The client is single-threaded and never blocks unless asked to: sends are
 * queued and written by gc_rc_progress(), received chunks are placed by
 * offset straight into the buffer the receive callback supplies.  Messages
 * from one source arrive in the order that source sent them.
 */
#ifndef GC_RELAY_CLIENT_H
#define GC_RELAY_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct gc_rc;
struct gc_rc_send;

/* What the relay delivered: the envelope of one incoming message. */
struct gc_rc_msg_info {
    uint32_t src_rank;
    uint32_t dst_rank;
    uint32_t context_id;
    int32_t tag;
    uint64_t msg_seq; /* per (src, dst) pair, counting from 0 */
    uint64_t msg_len;
};

/*
 * Called when the first chunk of a message arrives.  Return a buffer of at
 * least info->msg_len bytes that the library fills in place, or NULL to let
 * the library allocate one (handed to `complete`, owned by the callee, who
 * frees it with free()).
 */
typedef void *(*gc_rc_alloc_fn)(void *arg, const struct gc_rc_msg_info *info);
/* Called once every byte of the message is in `buf`. */
typedef void (*gc_rc_complete_fn)(void *arg, const struct gc_rc_msg_info *info,
                                  void *buf, int library_allocated);

struct gc_rc_options {
    const char *endpoint; /* "unix:/path", "/path" or "host:port" */
    const uint8_t *token; /* job token */
    size_t token_len;
    uint32_t job_id;
    uint32_t rank;          /* our grid rank */
    int connect_timeout_ms; /* handshake budget; 0 = 10000 */
    gc_rc_alloc_fn on_alloc;
    gc_rc_complete_fn on_complete;
    void *cb_arg;
};

/*
 * Connect, negotiate the version and authenticate (mutually: the relay
 * proves it knows the token too).  Returns 0 with *out set, or -1 with a
 * human-readable reason in `err` (e.g. the relay's ERROR text for a wrong
 * token).
 */
int gc_rc_connect(const struct gc_rc_options *opt, struct gc_rc **out,
                  char *err, size_t err_len);

/*
 * Flush queued sends (up to `timeout_ms`, < 0 = no limit), send BYE and
 * close.  Returns 0 when everything queued was written, -1 otherwise.
 * Frees `rc` in every case.
 */
int gc_rc_close(struct gc_rc *rc, int timeout_ms);

/* Messages up to this size are copied by gc_rc_isend: control messages
 * built on the stack. */
#define GC_RC_COPIED 32

/*
 * Queue a message.  `buf` must stay valid and unchanged until the send
 * completes (gc_rc_send_done), unless len <= GC_RC_COPIED.  len may be 0.
 * Returns 0 or -1 (connection failed, see gc_rc_error; *req is then NULL).
 */
int gc_rc_isend(struct gc_rc *rc, uint32_t dst_rank, uint32_t context_id,
                int32_t tag, const void *buf, uint64_t len,
                struct gc_rc_send **req);
/* 1 once every byte of the request is handed to the kernel, else 0. */
int gc_rc_send_done(const struct gc_rc_send *req);
/* The message's msg_seq, as the receiver sees it in gc_rc_msg_info. */
uint64_t gc_rc_send_seq(const struct gc_rc_send *req);
/* Release a request (done or not; an unfinished one is still sent). */
void gc_rc_send_free(struct gc_rc_send *req);

/*
 * Make progress: write queued data, read and dispatch incoming frames.
 * Waits at most `timeout_ms` for the socket (0 = just poll, < 0 = wait
 * until something happens).  Returns the number of messages completed
 * (sent or received) during the call, or -1 on a fatal error: connection
 * lost, protocol error or an ERROR frame from the relay (gc_rc_error says
 * which, including the relay's text).
 */
int gc_rc_progress(struct gc_rc *rc, int timeout_ms);

/* Blocking helpers built on the above; 0 or -1. */
int gc_rc_wait_send(struct gc_rc *rc, struct gc_rc_send *req);
int gc_rc_send(struct gc_rc *rc, uint32_t dst_rank, uint32_t context_id,
               int32_t tag, const void *buf, uint64_t len);

/* The socket, for callers that multiplex it with poll(), and the events
 * gc_rc_progress would wait for on it (POLLOUT only while data is
 * queued). */
int gc_rc_fd(const struct gc_rc *rc);
int gc_rc_poll_events(const struct gc_rc *rc);
/* Bytes queued but not yet written to the socket. */
uint64_t gc_rc_pending_bytes(const struct gc_rc *rc);
/* Chunk size the relay announced (messages larger are sent in pieces). */
uint32_t gc_rc_max_chunk(const struct gc_rc *rc);
/* Last fatal error text ("" when none). */
const char *gc_rc_error(const struct gc_rc *rc);
/* When the session ended because its connection was lost (read or write
 * error, or the relay closed it): why, e.g. "Connection reset by peer";
 * else NULL (no failure, or a protocol error or the relay's ERROR). */
const char *gc_rc_lost(const struct gc_rc *rc);
/* Relay's error code from an ERROR frame, 0 if none (enum gc_error_code). */
int gc_rc_error_code(const struct gc_rc *rc);

#endif
