/*
 * Frame header codec.  Byte layout (little-endian) is fixed by
 * docs/protocol.md; offsets are listed once here so encode and decode
 * cannot drift apart.
 */
#include "gc_proto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <string.h>
#include <zlib.h>

enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_TYPE = 5,
    OFF_FLAGS = 6,
    OFF_JOB = 8,
    OFF_SRC = 12,
    OFF_DST = 16,
    OFF_CONTEXT = 20,
    OFF_TAG = 24,
    OFF_PAYLOAD_LEN = 28,
    OFF_MSG_SEQ = 32,
    OFF_MSG_LEN = 40,
    OFF_CHUNK_OFFSET = 48,
    OFF_LINK_SEQ = 56,
    OFF_RESERVED = 64,
    OFF_CHECKSUM = 68,
};
_Static_assert(OFF_CHECKSUM + 4 == GC_HEADER_SIZE, "header layout");

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t header_checksum(const uint8_t *bytes)
{
    return (uint32_t)crc32(0L, bytes, OFF_CHECKSUM);
}

void gc_header_encode(const struct gc_frame_header *h,
                      uint8_t out[GC_HEADER_SIZE])
{
    put32(out + OFF_MAGIC, GC_PROTO_MAGIC);
    out[OFF_VERSION] = h->version ? h->version : GC_PROTO_VERSION;
    out[OFF_TYPE] = h->type;
    put16(out + OFF_FLAGS, h->flags);
    put32(out + OFF_JOB, h->job_id);
    put32(out + OFF_SRC, h->src_rank);
    put32(out + OFF_DST, h->dst_rank);
    put32(out + OFF_CONTEXT, h->context_id);
    put32(out + OFF_TAG, (uint32_t)h->tag);
    put32(out + OFF_PAYLOAD_LEN, h->payload_len);
    put64(out + OFF_MSG_SEQ, h->msg_seq);
    put64(out + OFF_MSG_LEN, h->msg_len);
    put64(out + OFF_CHUNK_OFFSET, h->chunk_offset);
    put64(out + OFF_LINK_SEQ, h->link_seq);
    put32(out + OFF_RESERVED, 0);
    put32(out + OFF_CHECKSUM, header_checksum(out));
}

/*
 * Which optional fields each frame type may carry.  Anything not listed
 * must be zero, so a confused or hostile sender is caught at the first
 * frame rather than by a downstream assertion.
 */
enum {
    F_SRC = 1 << 0,
    F_DST = 1 << 1,
    F_CONTEXT = 1 << 2,
    F_TAG = 1 << 3,
    F_MSG_SEQ = 1 << 4,
    F_MSG_LEN = 1 << 5,
    F_CHUNK_OFFSET = 1 << 6,
    F_LINK_SEQ = 1 << 7,
    F_FLAGS = 1 << 8,
};

struct frame_rule {
    unsigned fields;
    uint32_t min_payload;
    uint32_t max_payload;
};

static const struct frame_rule frame_rules[GC_FRAME_TYPE_MAX + 1] = {
    [GC_FRAME_HELLO] = {F_SRC, GC_HELLO_SIZE, GC_HELLO_SIZE},
    [GC_FRAME_AUTH] = {F_SRC, GC_MAC_SIZE, GC_MAC_SIZE},
    [GC_FRAME_AUTH_OK] = {F_SRC, GC_MAC_SIZE, GC_MAC_SIZE},
    [GC_FRAME_DATA] = {F_SRC | F_DST | F_CONTEXT | F_TAG | F_MSG_SEQ |
                           F_MSG_LEN | F_CHUNK_OFFSET | F_LINK_SEQ | F_FLAGS,
                       0, GC_MAX_PAYLOAD},
    [GC_FRAME_ACK] = {F_LINK_SEQ, 0, 0},
    [GC_FRAME_CREDIT] = {F_DST | F_MSG_LEN, 0, 0},
    [GC_FRAME_PING] = {F_MSG_SEQ, 0, 0},
    [GC_FRAME_PONG] = {F_MSG_SEQ, 0, 0},
    [GC_FRAME_ERROR] = {F_SRC | F_DST | F_TAG, 0, GC_MAX_CONTROL_PAYLOAD},
    [GC_FRAME_BYE] = {0, 0, 0},
    [GC_FRAME_JOB] = {0, GC_JOB_FIXED_SIZE, GC_MAX_CONTROL_PAYLOAD},
};

static int unused_fields_zero(const struct gc_frame_header *h, unsigned allowed)
{
    return ((allowed & F_SRC) || h->src_rank == 0) &&
           ((allowed & F_DST) || h->dst_rank == 0) &&
           ((allowed & F_CONTEXT) || h->context_id == 0) &&
           ((allowed & F_TAG) || h->tag == 0) &&
           ((allowed & F_MSG_SEQ) || h->msg_seq == 0) &&
           ((allowed & F_MSG_LEN) || h->msg_len == 0) &&
           ((allowed & F_CHUNK_OFFSET) || h->chunk_offset == 0) &&
           ((allowed & F_LINK_SEQ) || h->link_seq == 0);
}

enum gc_decode_status gc_header_decode(const uint8_t in[GC_HEADER_SIZE],
                                       struct gc_frame_header *h)
{
    if (get32(in + OFF_MAGIC) != GC_PROTO_MAGIC)
        return GC_DECODE_BAD_MAGIC;
    if (get32(in + OFF_CHECKSUM) != header_checksum(in))
        return GC_DECODE_BAD_CHECKSUM;
    h->version = in[OFF_VERSION];
    if (h->version < GC_PROTO_VERSION_MIN || h->version > GC_PROTO_VERSION)
        return GC_DECODE_BAD_VERSION;
    h->type = in[OFF_TYPE];
    if (h->type == 0 || h->type > GC_FRAME_TYPE_MAX)
        return GC_DECODE_BAD_TYPE;
    if (get32(in + OFF_RESERVED) != 0)
        return GC_DECODE_BAD_RESERVED;

    h->flags = get16(in + OFF_FLAGS);
    h->job_id = get32(in + OFF_JOB);
    h->src_rank = get32(in + OFF_SRC);
    h->dst_rank = get32(in + OFF_DST);
    h->context_id = get32(in + OFF_CONTEXT);
    h->tag = (int32_t)get32(in + OFF_TAG);
    h->payload_len = get32(in + OFF_PAYLOAD_LEN);
    h->msg_seq = get64(in + OFF_MSG_SEQ);
    h->msg_len = get64(in + OFF_MSG_LEN);
    h->chunk_offset = get64(in + OFF_CHUNK_OFFSET);
    h->link_seq = get64(in + OFF_LINK_SEQ);

    const struct frame_rule *rule = &frame_rules[h->type];
    if (h->flags & ~((rule->fields & F_FLAGS) ? GC_FLAGS_KNOWN : 0u))
        return GC_DECODE_BAD_FLAGS;
    if (h->payload_len < rule->min_payload ||
        h->payload_len > rule->max_payload)
        return GC_DECODE_BAD_PAYLOAD_LEN;
    if (h->src_rank > GC_MAX_RANK || h->dst_rank > GC_MAX_RANK)
        return GC_DECODE_BAD_RANK;
    if (h->msg_len > GC_MAX_MESSAGE)
        return GC_DECODE_BAD_MSG_LEN;
    if (!unused_fields_zero(h, rule->fields))
        return GC_DECODE_BAD_FIELD;

    if (h->type == GC_FRAME_DATA) {
        /* msg_len <= 2^40 and payload_len < 2^32, so no overflow here. */
        if (h->chunk_offset > h->msg_len ||
            h->payload_len > h->msg_len - h->chunk_offset)
            return GC_DECODE_BAD_CHUNK;
        int ends = h->chunk_offset + h->payload_len == h->msg_len;
        if (ends != !!(h->flags & GC_FLAG_LAST_CHUNK))
            return GC_DECODE_BAD_CHUNK;
        /* Only an empty message may have an empty chunk. */
        if (h->payload_len == 0 && h->msg_len != 0)
            return GC_DECODE_BAD_CHUNK;
    }
    if (h->type == GC_FRAME_ERROR && (h->tag <= 0 || h->tag > GC_ERR_MAX))
        return GC_DECODE_BAD_FIELD;
    return GC_DECODE_OK;
}

int gc_header_equal(const struct gc_frame_header *a,
                    const struct gc_frame_header *b)
{
    return a->version == b->version && a->type == b->type &&
           a->flags == b->flags && a->job_id == b->job_id &&
           a->src_rank == b->src_rank && a->dst_rank == b->dst_rank &&
           a->context_id == b->context_id && a->tag == b->tag &&
           a->payload_len == b->payload_len && a->msg_seq == b->msg_seq &&
           a->msg_len == b->msg_len && a->chunk_offset == b->chunk_offset &&
           a->link_seq == b->link_seq;
}

const char *gc_decode_status_str(enum gc_decode_status status)
{
    static const char *const names[] = {
        [GC_DECODE_OK] = "ok",
        [GC_DECODE_BAD_MAGIC] = "bad magic",
        [GC_DECODE_BAD_VERSION] = "unsupported protocol version",
        [GC_DECODE_BAD_TYPE] = "unknown frame type",
        [GC_DECODE_BAD_FLAGS] = "unknown flag bits",
        [GC_DECODE_BAD_RESERVED] = "reserved field not zero",
        [GC_DECODE_BAD_CHECKSUM] = "header checksum mismatch",
        [GC_DECODE_BAD_PAYLOAD_LEN] = "payload length out of range",
        [GC_DECODE_BAD_RANK] = "rank out of range",
        [GC_DECODE_BAD_MSG_LEN] = "message length out of range",
        [GC_DECODE_BAD_CHUNK] = "chunk outside its message",
        [GC_DECODE_BAD_FIELD] = "field not valid for frame type",
    };
    if ((unsigned)status >= sizeof names / sizeof names[0])
        return "unknown decode status";
    return names[status];
}

const char *gc_frame_type_name(unsigned type)
{
    static const char *const names[] = {
        [GC_FRAME_HELLO] = "HELLO",     [GC_FRAME_AUTH] = "AUTH",
        [GC_FRAME_AUTH_OK] = "AUTH_OK", [GC_FRAME_DATA] = "DATA",
        [GC_FRAME_ACK] = "ACK",         [GC_FRAME_CREDIT] = "CREDIT",
        [GC_FRAME_PING] = "PING",       [GC_FRAME_PONG] = "PONG",
        [GC_FRAME_ERROR] = "ERROR",     [GC_FRAME_BYE] = "BYE",
        [GC_FRAME_JOB] = "JOB",
    };
    if (type == 0 || type > GC_FRAME_TYPE_MAX)
        return "UNKNOWN";
    return names[type];
}

const char *gc_error_code_name(unsigned code)
{
    static const char *const names[] = {
        [GC_ERR_NONE] = "none",
        [GC_ERR_BAD_FRAME] = "bad-frame",
        [GC_ERR_VERSION] = "version",
        [GC_ERR_AUTH] = "auth",
        [GC_ERR_BAD_RANK] = "bad-rank",
        [GC_ERR_DUPLICATE_RANK] = "duplicate-rank",
        [GC_ERR_PEER_UNREACHABLE] = "peer-unreachable",
        [GC_ERR_SHUTDOWN] = "shutdown",
        [GC_ERR_PROTOCOL] = "protocol",
        [GC_ERR_INTERNAL] = "internal",
        [GC_ERR_JOB_ENDED] = "job-ended",
    };
    if (code > GC_ERR_MAX)
        return "unknown";
    return names[code];
}

/* ---- control payloads ------------------------------------------------ */

size_t gc_hello_encode(const struct gc_hello *hello, uint8_t *out, size_t cap)
{
    if (cap < GC_HELLO_SIZE)
        return 0;
    uint8_t *p = out;
    put16(p, hello->version_min);
    put16(p + 2, hello->version_max);
    put32(p + 4, hello->capabilities);
    put32(p + 8, hello->role);
    put32(p + 12, hello->stream_index);
    put32(p + 16, hello->stream_count);
    put32(p + 20, hello->max_chunk);
    put64(p + 24, hello->epoch);
    put64(p + 32, hello->credit);
    memcpy(p + 40, hello->nonce, GC_NONCE_SIZE);
    memset(p + 40 + GC_NONCE_SIZE, 0, GC_NAME_MAX + 1);
    size_t name_len = strnlen(hello->name, GC_NAME_MAX);
    memcpy(p + 40 + GC_NONCE_SIZE, hello->name, name_len);
    return GC_HELLO_SIZE;
}

int gc_hello_decode(const uint8_t *in, size_t len, struct gc_hello *hello)
{
    if (len != GC_HELLO_SIZE)
        return -1;
    hello->version_min = get16(in);
    hello->version_max = get16(in + 2);
    hello->capabilities = get32(in + 4);
    hello->role = get32(in + 8);
    hello->stream_index = get32(in + 12);
    hello->stream_count = get32(in + 16);
    hello->max_chunk = get32(in + 20);
    hello->epoch = get64(in + 24);
    hello->credit = get64(in + 32);
    memcpy(hello->nonce, in + 40, GC_NONCE_SIZE);
    const uint8_t *name = in + 40 + GC_NONCE_SIZE;
    if (memchr(name, 0, GC_NAME_MAX + 1) == NULL)
        return -1;
    memcpy(hello->name, name, GC_NAME_MAX + 1);
    if (hello->role != GC_ROLE_RANK && hello->role != GC_ROLE_RELAY)
        return -1;
    if (hello->version_min > hello->version_max)
        return -1;
    return 0;
}

/* ---- JOB frames (service links) ---------------------------------------- */

static int job_frame_valid(const struct gc_job_frame *job)
{
    if (job->op == GC_JOB_WITHDRAW)
        return job->site_count == 0 &&
               memchr(job->reason, 0, sizeof job->reason) != NULL;
    if (job->op != GC_JOB_ANNOUNCE || job->site_count == 0 ||
        job->site_count > GC_JOB_SITES_MAX)
        return 0;
    for (unsigned i = 0; i < job->site_count; i++) {
        const struct gc_job_site *a = &job->sites[i];
        if (memchr(a->name, 0, sizeof a->name) == NULL || a->name[0] == '\0' ||
            a->rank_count == 0 ||
            (uint64_t)a->first_rank + a->rank_count - 1 > GC_MAX_RANK)
            return 0;
        for (unsigned j = 0; j < i; j++) {
            const struct gc_job_site *b = &job->sites[j];
            if (strcmp(a->name, b->name) == 0 ||
                ((uint64_t)a->first_rank <
                     (uint64_t)b->first_rank + b->rank_count &&
                 (uint64_t)b->first_rank <
                     (uint64_t)a->first_rank + a->rank_count))
                return 0;
        }
    }
    return 1;
}

size_t gc_job_frame_encode(const struct gc_job_frame *job, uint8_t *out,
                           size_t cap)
{
    size_t reason_len = job->op == GC_JOB_WITHDRAW ? strlen(job->reason) : 0;
    size_t len = GC_JOB_FIXED_SIZE +
                 (size_t)job->site_count * GC_JOB_SITE_SIZE + reason_len;
    if (!job_frame_valid(job) || len > cap || len > GC_MAX_CONTROL_PAYLOAD)
        return 0;
    memset(out, 0, GC_JOB_FIXED_SIZE);
    out[0] = job->op;
    out[1] = job->site_count;
    put64(out + 8, job->job_credit);
    memcpy(out + 16, job->token_hash, GC_JOB_HASH_SIZE);
    uint8_t *p = out + GC_JOB_FIXED_SIZE;
    for (unsigned i = 0; i < job->site_count; i++, p += GC_JOB_SITE_SIZE) {
        put32(p, job->sites[i].first_rank);
        put32(p + 4, job->sites[i].rank_count);
        memset(p + 8, 0, GC_NAME_MAX + 1);
        memcpy(p + 8, job->sites[i].name, strlen(job->sites[i].name));
    }
    memcpy(p, job->reason, reason_len);
    return len;
}

int gc_job_frame_decode(const uint8_t *in, size_t len, struct gc_job_frame *job)
{
    memset(job, 0, sizeof *job);
    if (len < GC_JOB_FIXED_SIZE || get16(in + 2) != 0 || get32(in + 4) != 0)
        return -1;
    job->op = in[0];
    job->site_count = in[1];
    job->job_credit = get64(in + 8);
    memcpy(job->token_hash, in + 16, GC_JOB_HASH_SIZE);
    size_t rest = len - GC_JOB_FIXED_SIZE;
    const uint8_t *p = in + GC_JOB_FIXED_SIZE;
    if (job->op == GC_JOB_WITHDRAW) {
        if (job->site_count != 0 || rest > GC_JOB_REASON_MAX ||
            memchr(p, 0, rest) != NULL)
            return -1;
        memcpy(job->reason, p, rest);
    } else {
        if (job->site_count > GC_JOB_SITES_MAX ||
            rest != (size_t)job->site_count * GC_JOB_SITE_SIZE)
            return -1;
        for (unsigned i = 0; i < job->site_count; i++, p += GC_JOB_SITE_SIZE) {
            job->sites[i].first_rank = get32(p);
            job->sites[i].rank_count = get32(p + 4);
            memcpy(job->sites[i].name, p + 8, GC_NAME_MAX + 1);
        }
    }
    return job_frame_valid(job) ? 0 : -1;
}

int gc_job_token_hash(const uint8_t *token, size_t len,
                      uint8_t hash[GC_JOB_HASH_SIZE])
{
    unsigned int out_len = 0;
    return EVP_Digest(token, len, hash, &out_len, EVP_sha256(), NULL) == 1 &&
                   out_len == GC_JOB_HASH_SIZE
               ? 0
               : -1;
}

int gc_auth_mac(const uint8_t *token, size_t token_len, const char *label,
                const uint8_t initiator_nonce[GC_NONCE_SIZE],
                const uint8_t responder_nonce[GC_NONCE_SIZE], uint32_t rank,
                uint8_t mac[GC_MAC_SIZE])
{
    uint8_t msg[64 + 2 * GC_NONCE_SIZE + 4];
    size_t label_len = strlen(label);
    if (label_len > 64)
        return -1;
    memcpy(msg, label, label_len);
    memcpy(msg + label_len, initiator_nonce, GC_NONCE_SIZE);
    memcpy(msg + label_len + GC_NONCE_SIZE, responder_nonce, GC_NONCE_SIZE);
    put32(msg + label_len + 2 * GC_NONCE_SIZE, rank);
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), token, (int)token_len, msg,
             label_len + 2 * GC_NONCE_SIZE + 4, mac, &mac_len) == NULL ||
        mac_len != GC_MAC_SIZE)
        return -1;
    return 0;
}

int gc_auth_mac_equal(const uint8_t a[GC_MAC_SIZE],
                      const uint8_t b[GC_MAC_SIZE])
{
    return CRYPTO_memcmp(a, b, GC_MAC_SIZE) == 0;
}

int gc_random_bytes(uint8_t *buf, size_t len)
{
    return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

void gc_secret_wipe(void *buf, size_t len)
{
    OPENSSL_cleanse(buf, len);
}

size_t gc_error_frame(uint32_t job_id, enum gc_error_code code,
                      const char *text, uint8_t *out, size_t cap)
{
    size_t text_len = strnlen(text, GC_MAX_CONTROL_PAYLOAD);
    if (cap < GC_HEADER_SIZE)
        return 0;
    if (text_len > cap - GC_HEADER_SIZE)
        text_len = cap - GC_HEADER_SIZE;
    struct gc_frame_header h = {
        .type = GC_FRAME_ERROR,
        .job_id = job_id,
        .tag = (int32_t)code,
        .payload_len = (uint32_t)text_len,
    };
    gc_header_encode(&h, out);
    memcpy(out + GC_HEADER_SIZE, text, text_len);
    return GC_HEADER_SIZE + text_len;
}
