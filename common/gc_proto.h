/*
 * GridColl wire protocol: frame header codec shared by gridrelay and
 * libgridcoll.  docs/protocol.md is the normative description; this header
 * is its single implementation.  Every frame is a fixed 72-byte
 * little-endian header followed by `payload_len` bytes of payload.
 */
#ifndef GC_PROTO_H
#define GC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define GC_PROTO_MAGIC       0x4c4f4347u /* "GCOL" read as little-endian u32 */
#define GC_PROTO_VERSION     1u
#define GC_PROTO_VERSION_MIN 1u
#define GC_HEADER_SIZE       72u

/* Hard protocol limits; configuration may only lower them. */
#define GC_MAX_PAYLOAD         (16u * 1024u * 1024u) /* one frame's payload */
#define GC_MAX_MESSAGE         (1ull << 40) /* one message's total size */
#define GC_MAX_RANK            0x00ffffffu  /* largest grid rank */
#define GC_MAX_CONTROL_PAYLOAD 4096u /* HELLO, AUTH, ERROR, ... payloads */

enum gc_frame_type {
    GC_FRAME_HELLO = 1,   /* version/capability negotiation + nonce */
    GC_FRAME_AUTH = 2,    /* HMAC proof of the job token */
    GC_FRAME_AUTH_OK = 3, /* authentication accepted, with counter-proof */
    GC_FRAME_DATA = 4,    /* one chunk of one message */
    GC_FRAME_ACK = 5,     /* cumulative link sequence acknowledgement */
    GC_FRAME_CREDIT = 6,  /* flow-control credit grant for one rank */
    GC_FRAME_PING = 7,
    GC_FRAME_PONG = 8,
    GC_FRAME_ERROR = 9, /* code in `tag`, UTF-8 text as payload */
    GC_FRAME_BYE = 10,  /* orderly close */
    GC_FRAME_JOB = 11,  /* service links: a job announced or withdrawn */
    GC_FRAME_TYPE_MAX = GC_FRAME_JOB
};

/* Header flags. Unknown bits are a protocol error. */
#define GC_FLAG_LAST_CHUNK 0x0001u /* DATA: chunk ends its message */
#define GC_FLAG_RESENT     0x0002u /* DATA: re-sent after a stream break */
#define GC_FLAGS_KNOWN     (GC_FLAG_LAST_CHUNK | GC_FLAG_RESENT)

/* Error codes carried in ERROR frames (in the `tag` field). */
enum gc_error_code {
    GC_ERR_NONE = 0,
    GC_ERR_BAD_FRAME = 1,        /* malformed header or payload */
    GC_ERR_VERSION = 2,          /* no common protocol version */
    GC_ERR_AUTH = 3,             /* wrong job token */
    GC_ERR_BAD_RANK = 4,         /* rank outside the job or not ours */
    GC_ERR_DUPLICATE_RANK = 5,   /* a session for this rank exists */
    GC_ERR_PEER_UNREACHABLE = 6, /* peer relay gone for good */
    GC_ERR_SHUTDOWN = 7,         /* relay is shutting down */
    GC_ERR_PROTOCOL = 8,         /* frame not valid in this state */
    GC_ERR_INTERNAL = 9,
    GC_ERR_JOB_ENDED = 10, /* the job was ended (launcher, peer, operator) */
    GC_ERR_MAX = GC_ERR_JOB_ENDED
};

/*
 * Decoded header.  Field meaning per frame type is given in
 * docs/protocol.md; fields a type does not use must be zero.
 */
struct gc_frame_header {
    uint8_t version;
    uint8_t type;
    uint16_t flags;
    uint32_t job_id;
    uint32_t src_rank;
    uint32_t dst_rank;
    uint32_t context_id;
    int32_t tag;
    uint32_t payload_len; /* bytes following the header */
    uint64_t msg_seq;     /* per (src, dst) pair, from 0 */
    uint64_t msg_len;     /* total message length (DATA), credit (CREDIT) */
    uint64_t chunk_offset;
    uint64_t link_seq; /* relay-to-relay sequence; cumulative ack (ACK) */
};

/* Decoder verdicts.  Zero is success; everything else names the field. */
enum gc_decode_status {
    GC_DECODE_OK = 0,
    GC_DECODE_BAD_MAGIC,
    GC_DECODE_BAD_VERSION,
    GC_DECODE_BAD_TYPE,
    GC_DECODE_BAD_FLAGS,
    GC_DECODE_BAD_RESERVED,
    GC_DECODE_BAD_CHECKSUM,
    GC_DECODE_BAD_PAYLOAD_LEN,
    GC_DECODE_BAD_RANK,
    GC_DECODE_BAD_MSG_LEN,
    GC_DECODE_BAD_CHUNK, /* offset/length outside the message */
    GC_DECODE_BAD_FIELD  /* a field this type must leave zero is not */
};

/* Serialise `h` into exactly GC_HEADER_SIZE bytes, checksum included. */
void gc_header_encode(const struct gc_frame_header *h,
                      uint8_t out[GC_HEADER_SIZE]);

/*
 * Parse and fully validate GC_HEADER_SIZE bytes.  On success fills `h` and
 * returns GC_DECODE_OK; otherwise `h` is unspecified.  Validation covers
 * everything a receiver needs before trusting lengths and ranks.
 */
enum gc_decode_status gc_header_decode(const uint8_t in[GC_HEADER_SIZE],
                                       struct gc_frame_header *h);

/* 1 when every field of the two decoded headers is equal. */
int gc_header_equal(const struct gc_frame_header *a,
                    const struct gc_frame_header *b);

const char *gc_decode_status_str(enum gc_decode_status status);
const char *gc_frame_type_name(unsigned type);
const char *gc_error_code_name(unsigned code);

/* ---- control payloads ------------------------------------------------ */

#define GC_NONCE_SIZE 32u
#define GC_MAC_SIZE   32u /* HMAC-SHA256 */
#define GC_NAME_MAX   63u

/* Capability bits announced in HELLO. */
#define GC_CAP_CREDIT 0x1u /* understands CREDIT frames */
#define GC_CAPS_ALL   (GC_CAP_CREDIT)

enum gc_peer_role {
    GC_ROLE_RANK = 1,  /* an application rank (client library) */
    GC_ROLE_RELAY = 2, /* a peer relay, on one WAN stream */
};

/*
 * HELLO payload.  The initiator proposes [version_min, version_max]; the
 * answer carries the chosen version in both fields.
 */
struct gc_hello {
    uint16_t version_min;
    uint16_t version_max;
    uint32_t capabilities;
    uint32_t role;
    uint32_t stream_index; /* RELAY: index of this stream in the link */
    uint32_t stream_count; /* RELAY: K */
    uint32_t max_chunk;    /* relay's chunk size (answer to a RANK) */
    uint64_t epoch;        /* sender process incarnation */
    uint64_t credit;       /* per-rank credit the sender grants */
    uint8_t nonce[GC_NONCE_SIZE];
    char name[GC_NAME_MAX + 1]; /* site name, NUL terminated */
};
#define GC_HELLO_SIZE                                                          \
    (2 + 2 + 4 + 4 + 4 + 4 + 4 + 8 + 8 + GC_NONCE_SIZE + GC_NAME_MAX + 1)

size_t gc_hello_encode(const struct gc_hello *hello, uint8_t *out, size_t cap);
/* Returns 0, or -1 when `len` is wrong or the name is not terminated. */
int gc_hello_decode(const uint8_t *in, size_t len, struct gc_hello *hello);

/*
 * Job-token proof.  Each side proves knowledge of the token by
 * HMAC-SHA256(token, label || nonce_a || nonce_b || rank_le32).  The label
 * differs per direction so a proof cannot be reflected back.
 */
#define GC_AUTH_LABEL_INITIATOR "gridcoll-v1 initiator"
#define GC_AUTH_LABEL_RESPONDER "gridcoll-v1 responder"
int gc_auth_mac(const uint8_t *token, size_t token_len, const char *label,
                const uint8_t initiator_nonce[GC_NONCE_SIZE],
                const uint8_t responder_nonce[GC_NONCE_SIZE], uint32_t rank,
                uint8_t mac[GC_MAC_SIZE]);
/* Constant-time comparison; 1 when equal. */
int gc_auth_mac_equal(const uint8_t a[GC_MAC_SIZE],
                      const uint8_t b[GC_MAC_SIZE]);
/* Fill `nonce` from the OpenSSL CSPRNG; 0 or -1. */
int gc_random_bytes(uint8_t *buf, size_t len);
/* Overwrite a secret (a job token, a buffer that held one) before its
 * memory is freed or reused; unlike a memset, the compiler keeps it. */
void gc_secret_wipe(void *buf, size_t len);

/*
 * JOB payload (service links, docs/protocol.md §9): a relay announces a job
 * registered with it to the peer sites of the job, or withdraws it.  The
 * announcement carries every site of the job with its rank range, a hash
 * of the job token (both sides must have been given the same job) and the
 * bytes of the job the sender will hold for the receiver's site (its
 * per-job budget).  A withdrawal carries a reason instead of sites.
 */
#define GC_JOB_SITES_MAX  16u
#define GC_JOB_HASH_SIZE  32u /* SHA-256 of the job token */
#define GC_JOB_REASON_MAX 255u
enum gc_job_op { GC_JOB_ANNOUNCE = 1, GC_JOB_WITHDRAW = 2 };
struct gc_job_site {
    uint32_t first_rank;
    uint32_t rank_count;
    char name[GC_NAME_MAX + 1];
};
struct gc_job_frame {
    uint8_t op;
    uint8_t site_count; /* announce: 1..GC_JOB_SITES_MAX; withdraw: 0 */
    uint64_t job_credit;
    uint8_t token_hash[GC_JOB_HASH_SIZE];
    struct gc_job_site sites[GC_JOB_SITES_MAX];
    char reason[GC_JOB_REASON_MAX + 1]; /* withdraw: NUL terminated */
};
#define GC_JOB_FIXED_SIZE (1 + 1 + 2 + 4 + 8 + GC_JOB_HASH_SIZE)
#define GC_JOB_SITE_SIZE  (4 + 4 + GC_NAME_MAX + 1)
/* Returns the payload size, or 0 when `cap` is too small or `job` is not
 * valid (see gc_job_frame_decode). */
size_t gc_job_frame_encode(const struct gc_job_frame *job, uint8_t *out,
                           size_t cap);
/* 0, or -1 when the payload is malformed: unknown op, a site count out of
 * range or not matching `len`, names not terminated or empty, rank ranges
 * empty, beyond GC_MAX_RANK or overlapping, duplicate names, a reason that
 * is too long. */
int gc_job_frame_decode(const uint8_t *in, size_t len,
                        struct gc_job_frame *job);
/* SHA-256 of a job token, for gc_job_frame.token_hash; 0 or -1. */
int gc_job_token_hash(const uint8_t *token, size_t len,
                      uint8_t hash[GC_JOB_HASH_SIZE]);

/*
 * Build an ERROR frame into `out` (header + text).  Returns the total
 * frame size, never more than GC_HEADER_SIZE + GC_MAX_CONTROL_PAYLOAD.
 */
size_t gc_error_frame(uint32_t job_id, enum gc_error_code code,
                      const char *text, uint8_t *out, size_t cap);

#endif
