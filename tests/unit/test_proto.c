/*
 * Unit test of the wire-protocol codec (common/gc_proto.c) and the small
 * parsers in common/gc_util.c.
 *
 * The byte offsets, frame rules and test vectors below are written from
 * docs/protocol.md, not from gc_proto.c, so a drift between the spec and the
 * code shows up here.  Malformed headers are built as raw bytes and then
 * re-sealed with a correct CRC-32, so each case reaches the check it is
 * aimed at instead of stopping at the checksum.
 */
#include "gc_proto.h"
#include "gc_util.h"

#define UNIT_CHECK_EXPR
#include "unit_check.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include <zlib.h>

/* ---- raw header access, offsets from docs/protocol.md ----------------- */

enum {
    O_MAGIC = 0,
    O_VERSION = 4,
    O_TYPE = 5,
    O_FLAGS = 6,
    O_JOB = 8,
    O_SRC = 12,
    O_DST = 16,
    O_CONTEXT = 20,
    O_TAG = 24,
    O_PAYLOAD_LEN = 28,
    O_MSG_SEQ = 32,
    O_MSG_LEN = 40,
    O_CHUNK_OFFSET = 48,
    O_LINK_SEQ = 56,
    O_RESERVED = 64,
    O_CHECKSUM = 68,
};

static void wr16(uint8_t *b, size_t off, uint16_t v)
{
    b[off] = (uint8_t)v;
    b[off + 1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *b, size_t off, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[off + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static void wr64(uint8_t *b, size_t off, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[off + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static uint16_t rd16(const uint8_t *b, size_t off)
{
    return (uint16_t)(b[off] | (b[off + 1] << 8));
}

static uint32_t rd32(const uint8_t *b, size_t off)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | b[off + (size_t)i];
    return v;
}

static uint64_t rd64(const uint8_t *b, size_t off)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | b[off + (size_t)i];
    return v;
}

/* Recompute the header CRC-32 after a deliberate corruption. */
static void reseal(uint8_t *b)
{
    wr32(b, O_CHECKSUM, (uint32_t)crc32(0L, b, O_CHECKSUM));
}

/* ---- frame rules, mirrored from the spec's frame type table ----------- */

enum field {
    FLD_SRC,
    FLD_DST,
    FLD_CONTEXT,
    FLD_TAG,
    FLD_MSG_SEQ,
    FLD_MSG_LEN,
    FLD_CHUNK_OFFSET,
    FLD_LINK_SEQ,
    FLD_COUNT
};

static const char *const field_names[FLD_COUNT] = {
    "src_rank", "dst_rank", "context_id",   "tag",
    "msg_seq",  "msg_len",  "chunk_offset", "link_seq",
};

#define BIT(f) (1u << (f))

struct rule {
    unsigned fields;
    int flags_allowed;
    uint32_t min_payload;
    uint32_t max_payload;
};

static const struct rule rules[GC_FRAME_TYPE_MAX + 1] = {
    [GC_FRAME_HELLO] = {BIT(FLD_SRC), 0, GC_HELLO_SIZE, GC_HELLO_SIZE},
    [GC_FRAME_AUTH] = {BIT(FLD_SRC), 0, GC_MAC_SIZE, GC_MAC_SIZE},
    [GC_FRAME_AUTH_OK] = {BIT(FLD_SRC), 0, GC_MAC_SIZE, GC_MAC_SIZE},
    [GC_FRAME_DATA] = {BIT(FLD_COUNT) - 1, 1, 0, GC_MAX_PAYLOAD},
    [GC_FRAME_ACK] = {BIT(FLD_LINK_SEQ), 0, 0, 0},
    [GC_FRAME_CREDIT] = {BIT(FLD_DST) | BIT(FLD_MSG_LEN), 0, 0, 0},
    [GC_FRAME_PING] = {BIT(FLD_MSG_SEQ), 0, 0, 0},
    [GC_FRAME_PONG] = {BIT(FLD_MSG_SEQ), 0, 0, 0},
    [GC_FRAME_ERROR] = {BIT(FLD_SRC) | BIT(FLD_DST) | BIT(FLD_TAG), 0, 0,
                        GC_MAX_CONTROL_PAYLOAD},
    [GC_FRAME_BYE] = {0, 0, 0, 0},
    [GC_FRAME_JOB] = {0, 0, GC_JOB_FIXED_SIZE, GC_MAX_CONTROL_PAYLOAD},
};

static void set_field(struct gc_frame_header *h, enum field f, uint64_t v)
{
    switch (f) {
    case FLD_SRC: h->src_rank = (uint32_t)v; break;
    case FLD_DST: h->dst_rank = (uint32_t)v; break;
    case FLD_CONTEXT: h->context_id = (uint32_t)v; break;
    case FLD_TAG: h->tag = (int32_t)v; break;
    case FLD_MSG_SEQ: h->msg_seq = v; break;
    case FLD_MSG_LEN: h->msg_len = v; break;
    case FLD_CHUNK_OFFSET: h->chunk_offset = v; break;
    case FLD_LINK_SEQ: h->link_seq = v; break;
    case FLD_COUNT: break;
    }
}

/* A typical valid header of each type; tests mutate one thing at a time. */
static struct gc_frame_header valid_header(unsigned type)
{
    struct gc_frame_header h = {
        .version = GC_PROTO_VERSION, .type = (uint8_t)type, .job_id = 42};
    switch (type) {
    case GC_FRAME_HELLO:
        h.src_rank = 3;
        h.payload_len = GC_HELLO_SIZE;
        break;
    case GC_FRAME_AUTH:
    case GC_FRAME_AUTH_OK:
        h.src_rank = 3;
        h.payload_len = GC_MAC_SIZE;
        break;
    case GC_FRAME_DATA:
        h.src_rank = 1;
        h.dst_rank = 2;
        h.context_id = 5;
        h.tag = 7;
        h.msg_seq = 9;
        h.msg_len = 1000;
        h.chunk_offset = 0;
        h.payload_len = 1000;
        h.flags = GC_FLAG_LAST_CHUNK;
        h.link_seq = 11;
        break;
    case GC_FRAME_ACK: h.link_seq = 11; break;
    case GC_FRAME_CREDIT:
        h.dst_rank = 2;
        h.msg_len = 4096;
        break;
    case GC_FRAME_PING:
    case GC_FRAME_PONG: h.msg_seq = 9; break;
    case GC_FRAME_ERROR:
        h.src_rank = 1;
        h.dst_rank = 2;
        h.tag = GC_ERR_AUTH;
        h.payload_len = 5;
        break;
    case GC_FRAME_JOB: h.payload_len = GC_JOB_FIXED_SIZE; break;
    default: break;
    }
    return h;
}

static enum gc_decode_status decode_bytes(const uint8_t *b)
{
    struct gc_frame_header h;
    return gc_header_decode(b, &h);
}

static void expect_bytes(const uint8_t *b, enum gc_decode_status want, int line,
                         const char *what)
{
    enum gc_decode_status got = decode_bytes(b);
    CHECK_AT(got == want, line, "%s: got '%s', want '%s'", what,
             gc_decode_status_str(got), gc_decode_status_str(want));
}

static void expect_header(const struct gc_frame_header *h,
                          enum gc_decode_status want, int line,
                          const char *what)
{
    uint8_t b[GC_HEADER_SIZE];
    gc_header_encode(h, b);
    expect_bytes(b, want, line, what);
}

/* Encode, decode, compare; also checks the spec's byte layout. */
static void roundtrip(const struct gc_frame_header *h, int line,
                      const char *what)
{
    uint8_t b[GC_HEADER_SIZE];
    struct gc_frame_header out;
    memset(&out, 0xa5, sizeof out);
    gc_header_encode(h, b);
    enum gc_decode_status st = gc_header_decode(b, &out);
    CHECK_AT(st == GC_DECODE_OK, line, "%s: decode '%s'", what,
             gc_decode_status_str(st));
    CHECK_AT(st != GC_DECODE_OK || gc_header_equal(h, &out), line,
             "%s: decoded header differs", what);

    int layout_ok =
        memcmp(b, "GCOL", 4) == 0 && rd32(b, O_MAGIC) == GC_PROTO_MAGIC &&
        b[O_VERSION] == h->version && b[O_TYPE] == h->type &&
        rd16(b, O_FLAGS) == h->flags && rd32(b, O_JOB) == h->job_id &&
        rd32(b, O_SRC) == h->src_rank && rd32(b, O_DST) == h->dst_rank &&
        rd32(b, O_CONTEXT) == h->context_id &&
        rd32(b, O_TAG) == (uint32_t)h->tag &&
        rd32(b, O_PAYLOAD_LEN) == h->payload_len &&
        rd64(b, O_MSG_SEQ) == h->msg_seq && rd64(b, O_MSG_LEN) == h->msg_len &&
        rd64(b, O_CHUNK_OFFSET) == h->chunk_offset &&
        rd64(b, O_LINK_SEQ) == h->link_seq && rd32(b, O_RESERVED) == 0 &&
        rd32(b, O_CHECKSUM) == (uint32_t)crc32(0L, b, 68);
    CHECK_AT(layout_ok, line, "%s: byte layout differs from the spec", what);
}

#define ROUNDTRIP(h, what)    roundtrip(&(h), __LINE__, what)
#define EXPECT_H(h, st, what) expect_header(&(h), st, __LINE__, what)
#define EXPECT_B(b, st, what) expect_bytes(b, st, __LINE__, what)

/* ---- header: valid frames --------------------------------------------- */

static void test_roundtrip_all_types(void)
{
    for (unsigned t = 1; t <= GC_FRAME_TYPE_MAX; t++) {
        struct gc_frame_header h = valid_header(t);
        char what[64];
        snprintf(what, sizeof what, "typical %s", gc_frame_type_name(t));
        roundtrip(&h, __LINE__, what);
        /* Every type accepts any job id and the extreme payload sizes. */
        h.job_id = UINT32_MAX;
        h.payload_len = rules[t].min_payload;
        if (t == GC_FRAME_DATA) {
            h.msg_len = 0;
            h.flags = GC_FLAG_LAST_CHUNK;
        }
        snprintf(what, sizeof what, "%s min payload", gc_frame_type_name(t));
        roundtrip(&h, __LINE__, what);
        h.payload_len = rules[t].max_payload;
        if (t == GC_FRAME_DATA)
            h.msg_len = GC_MAX_PAYLOAD;
        snprintf(what, sizeof what, "%s max payload", gc_frame_type_name(t));
        roundtrip(&h, __LINE__, what);
    }

    struct gc_frame_header h = valid_header(GC_FRAME_HELLO);
    h.src_rank = GC_MAX_RANK;
    ROUNDTRIP(h, "HELLO max rank");
    h = valid_header(GC_FRAME_AUTH);
    h.src_rank = 0;
    ROUNDTRIP(h, "AUTH rank 0 (relay stream)");
    h = valid_header(GC_FRAME_AUTH_OK);
    h.src_rank = GC_MAX_RANK;
    ROUNDTRIP(h, "AUTH_OK max rank");

    /* DATA: a 0-byte message is one empty chunk with LAST_CHUNK. */
    h = valid_header(GC_FRAME_DATA);
    h.msg_len = 0;
    h.payload_len = 0;
    ROUNDTRIP(h, "DATA empty message");

    /* DATA: the last chunk of the largest message, every field at max. */
    h = valid_header(GC_FRAME_DATA);
    h.src_rank = GC_MAX_RANK;
    h.dst_rank = GC_MAX_RANK;
    h.context_id = UINT32_MAX;
    h.tag = INT32_MAX;
    h.msg_seq = UINT64_MAX;
    h.msg_len = GC_MAX_MESSAGE;
    h.payload_len = GC_MAX_PAYLOAD;
    h.chunk_offset = GC_MAX_MESSAGE - GC_MAX_PAYLOAD;
    h.link_seq = UINT64_MAX;
    h.flags = GC_FLAG_LAST_CHUNK | GC_FLAG_RESENT;
    ROUNDTRIP(h, "DATA last chunk of largest message");

    /* DATA: first and middle chunks carry no LAST_CHUNK. */
    h = valid_header(GC_FRAME_DATA);
    h.msg_len = 3000;
    h.payload_len = 1000;
    h.flags = 0;
    ROUNDTRIP(h, "DATA first chunk");
    h.chunk_offset = 1000;
    h.flags = GC_FLAG_RESENT;
    h.tag = INT32_MIN; /* tags are opaque: negative values travel too */
    ROUNDTRIP(h, "DATA middle chunk, resent, negative tag");
    h.chunk_offset = 2000;
    h.flags = GC_FLAG_LAST_CHUNK;
    h.tag = -1;
    h.src_rank = 0;
    h.dst_rank = 0;
    h.msg_seq = 0;
    h.link_seq = 0; /* rank sessions carry no link sequence */
    ROUNDTRIP(h, "DATA last chunk, zero ranks and sequences");

    h = valid_header(GC_FRAME_ACK);
    h.link_seq = UINT64_MAX;
    ROUNDTRIP(h, "ACK max link_seq");
    h.link_seq = 0;
    ROUNDTRIP(h, "ACK link_seq 0");

    h = valid_header(GC_FRAME_CREDIT);
    h.dst_rank = GC_MAX_RANK;
    h.msg_len = GC_MAX_MESSAGE;
    ROUNDTRIP(h, "CREDIT max");
    h.dst_rank = 0;
    h.msg_len = 0;
    ROUNDTRIP(h, "CREDIT zero");

    h = valid_header(GC_FRAME_PING);
    h.msg_seq = UINT64_MAX;
    ROUNDTRIP(h, "PING max seq");
    h = valid_header(GC_FRAME_PONG);
    h.msg_seq = 0;
    ROUNDTRIP(h, "PONG seq 0");

    for (int code = 1; code <= GC_ERR_MAX; code++) {
        h = valid_header(GC_FRAME_ERROR);
        h.tag = code;
        h.src_rank = GC_MAX_RANK;
        h.dst_rank = 0;
        ROUNDTRIP(h, "ERROR each code");
    }

    h = valid_header(GC_FRAME_BYE);
    ROUNDTRIP(h, "BYE");

    /* Version 0 in the struct means "current version" to the encoder. */
    uint8_t b[GC_HEADER_SIZE];
    h = valid_header(GC_FRAME_BYE);
    h.version = 0;
    gc_header_encode(&h, b);
    CHECK(b[O_VERSION] == GC_PROTO_VERSION);
    struct gc_frame_header out;
    CHECK(gc_header_decode(b, &out) == GC_DECODE_OK &&
          out.version == GC_PROTO_VERSION);
}

/* Known-answer vectors printed in docs/protocol.md. */
static void test_spec_vectors(void)
{
    static const uint8_t ping[GC_HEADER_SIZE] = {
        0x47, 0x43, 0x4f, 0x4c, 0x01, 0x07, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa1, 0x9e, 0xaa, 0xb8,
    };
    static const uint8_t data[GC_HEADER_SIZE] = {
        0x47, 0x43, 0x4f, 0x4c, 0x01, 0x04, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x07, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1d, 0x88, 0x07, 0xb4,
    };
    uint8_t b[GC_HEADER_SIZE];
    struct gc_frame_header h = {
        .type = GC_FRAME_PING, .job_id = 1, .msg_seq = 5};
    gc_header_encode(&h, b);
    CHECK(memcmp(b, ping, sizeof ping) == 0);

    h = (struct gc_frame_header){.type = GC_FRAME_DATA,
                                 .flags = GC_FLAG_LAST_CHUNK,
                                 .job_id = 1,
                                 .dst_rank = 2,
                                 .tag = 7,
                                 .payload_len = 5,
                                 .msg_len = 5,
                                 .link_seq = 1};
    gc_header_encode(&h, b);
    CHECK(memcmp(b, data, sizeof data) == 0);

    static const uint8_t mac_i[GC_MAC_SIZE] = {
        0x2e, 0x6e, 0x81, 0xc6, 0x26, 0x1d, 0x61, 0x70, 0x1c, 0xb2, 0x42,
        0x8f, 0x4b, 0x01, 0xea, 0x08, 0x84, 0x79, 0xc2, 0x7a, 0xd0, 0xe2,
        0x6f, 0x2f, 0x9c, 0xdb, 0xba, 0x1f, 0x83, 0x2d, 0x28, 0xff,
    };
    static const uint8_t mac_r[GC_MAC_SIZE] = {
        0xe6, 0x74, 0x9c, 0x02, 0x04, 0x6a, 0x54, 0x8b, 0x71, 0xab, 0xb0,
        0xe5, 0xc0, 0x8f, 0x4e, 0xbc, 0x97, 0x41, 0x4e, 0xac, 0xee, 0xab,
        0xdf, 0x75, 0x13, 0x55, 0x72, 0xfa, 0xe8, 0x38, 0x85, 0x94,
    };
    uint8_t ni[GC_NONCE_SIZE], nr[GC_NONCE_SIZE], mac[GC_MAC_SIZE];
    memset(ni, 0x01, sizeof ni);
    memset(nr, 0x02, sizeof nr);
    const uint8_t *token = (const uint8_t *)"secret";
    CHECK(gc_auth_mac(token, 6, GC_AUTH_LABEL_INITIATOR, ni, nr, 3, mac) == 0 &&
          memcmp(mac, mac_i, sizeof mac) == 0);
    CHECK(gc_auth_mac(token, 6, GC_AUTH_LABEL_RESPONDER, ni, nr, 3, mac) == 0 &&
          memcmp(mac, mac_r, sizeof mac) == 0);
}

/* ---- header: rejection of every malformed field ----------------------- */

static void test_bad_magic(void)
{
    uint8_t b[GC_HEADER_SIZE];
    struct gc_frame_header h = valid_header(GC_FRAME_PING);
    gc_header_encode(&h, b);
    wr32(b, O_MAGIC, 0x47434f4cu); /* "GCOL" read big-endian */
    reseal(b);
    EXPECT_B(b, GC_DECODE_BAD_MAGIC, "byte-swapped magic");
    wr32(b, O_MAGIC, 0);
    reseal(b);
    EXPECT_B(b, GC_DECODE_BAD_MAGIC, "zero magic");
    memcpy(b, "GET ", 4); /* an HTTP client on the wrong port */
    reseal(b);
    EXPECT_B(b, GC_DECODE_BAD_MAGIC, "HTTP request");
}

static void test_bad_version(void)
{
    static const unsigned versions[] = {0, GC_PROTO_VERSION + 1, 255};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        uint8_t b[GC_HEADER_SIZE];
        struct gc_frame_header h = valid_header(GC_FRAME_HELLO);
        gc_header_encode(&h, b);
        b[O_VERSION] = (uint8_t)versions[i];
        reseal(b);
        CHECK_AT(decode_bytes(b) == GC_DECODE_BAD_VERSION, __LINE__,
                 "version %u accepted", versions[i]);
    }
}

static void test_bad_type(void)
{
    static const unsigned types[] = {0, GC_FRAME_TYPE_MAX + 1, 128, 255};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        uint8_t b[GC_HEADER_SIZE];
        struct gc_frame_header h = valid_header(GC_FRAME_BYE);
        gc_header_encode(&h, b);
        b[O_TYPE] = (uint8_t)types[i];
        reseal(b);
        CHECK_AT(decode_bytes(b) == GC_DECODE_BAD_TYPE, __LINE__,
                 "type %u accepted", types[i]);
    }
    CHECK(strcmp(gc_frame_type_name(0), "UNKNOWN") == 0);
    CHECK(strcmp(gc_frame_type_name(GC_FRAME_TYPE_MAX + 1), "UNKNOWN") == 0);
}

static void test_bad_flags(void)
{
    for (unsigned t = 1; t <= GC_FRAME_TYPE_MAX; t++) {
        int all_rejected = 1;
        for (unsigned bit = 0; bit < 16; bit++) {
            uint16_t flag = (uint16_t)(1u << bit);
            if (rules[t].flags_allowed && (flag & GC_FLAGS_KNOWN))
                continue;
            struct gc_frame_header h = valid_header(t);
            h.flags |= flag;
            uint8_t b[GC_HEADER_SIZE];
            gc_header_encode(&h, b);
            if (decode_bytes(b) != GC_DECODE_BAD_FLAGS) {
                all_rejected = 0;
                fprintf(stderr, "  %s accepted flag 0x%04x\n",
                        gc_frame_type_name(t), flag);
            }
        }
        CHECK_AT(all_rejected, __LINE__, "%s: every disallowed flag rejected",
                 gc_frame_type_name(t));
    }
    struct gc_frame_header h = valid_header(GC_FRAME_ACK);
    h.flags = GC_FLAG_LAST_CHUNK;
    EXPECT_H(h, GC_DECODE_BAD_FLAGS, "LAST_CHUNK on ACK");
    h = valid_header(GC_FRAME_PING);
    h.flags = GC_FLAG_RESENT;
    EXPECT_H(h, GC_DECODE_BAD_FLAGS, "RESENT on PING");
    h = valid_header(GC_FRAME_DATA);
    h.flags = 0xffff;
    EXPECT_H(h, GC_DECODE_BAD_FLAGS, "all flag bits on DATA");
}

static void test_bad_reserved(void)
{
    for (size_t i = 0; i < 4; i++) {
        uint8_t b[GC_HEADER_SIZE];
        struct gc_frame_header h = valid_header(GC_FRAME_DATA);
        gc_header_encode(&h, b);
        b[O_RESERVED + i] = 0x01;
        reseal(b);
        CHECK_AT(decode_bytes(b) == GC_DECODE_BAD_RESERVED, __LINE__,
                 "reserved byte %zu accepted", i);
    }
    uint8_t b[GC_HEADER_SIZE];
    struct gc_frame_header h = valid_header(GC_FRAME_BYE);
    gc_header_encode(&h, b);
    wr32(b, O_RESERVED, UINT32_MAX);
    reseal(b);
    EXPECT_B(b, GC_DECODE_BAD_RESERVED, "reserved all ones");
}

/*
 * CRC-32 detects every burst of up to 32 bits, so every one-byte change of
 * a valid header must be rejected: by the magic check for bytes 0..3,
 * otherwise by the checksum (including changes to the checksum itself).
 */
static void test_single_byte_corruption(void)
{
    for (unsigned t = 1; t <= GC_FRAME_TYPE_MAX; t++) {
        struct gc_frame_header h = valid_header(t);
        uint8_t good[GC_HEADER_SIZE];
        gc_header_encode(&h, good);
        for (size_t i = 0; i < GC_HEADER_SIZE; i++) {
            enum gc_decode_status want =
                i < 4 ? GC_DECODE_BAD_MAGIC : GC_DECODE_BAD_CHECKSUM;
            int all_rejected = 1;
            for (unsigned x = 1; x <= 0xff; x++) {
                uint8_t b[GC_HEADER_SIZE];
                memcpy(b, good, sizeof b);
                b[i] ^= (uint8_t)x;
                if (decode_bytes(b) != want) {
                    all_rejected = 0;
                    break;
                }
            }
            CHECK_AT(all_rejected, __LINE__, "%s: corruption of byte %zu",
                     gc_frame_type_name(t), i);
        }
    }
}

static void test_bad_payload_len(void)
{
    for (unsigned t = 1; t <= GC_FRAME_TYPE_MAX; t++) {
        uint32_t bad[3];
        size_t n = 0;
        if (rules[t].min_payload > 0)
            bad[n++] = rules[t].min_payload - 1;
        bad[n++] = rules[t].max_payload + 1;
        bad[n++] = UINT32_MAX;
        for (size_t i = 0; i < n; i++) {
            struct gc_frame_header h = valid_header(t);
            h.payload_len = bad[i];
            /* Keep DATA's chunk consistent so only the length is wrong. */
            if (t == GC_FRAME_DATA)
                h.msg_len = bad[i];
            char what[64];
            snprintf(what, sizeof what, "%s payload_len %u",
                     gc_frame_type_name(t), bad[i]);
            expect_header(&h, GC_DECODE_BAD_PAYLOAD_LEN, __LINE__, what);
        }
    }
    struct gc_frame_header h = valid_header(GC_FRAME_ACK);
    h.payload_len = 1;
    EXPECT_H(h, GC_DECODE_BAD_PAYLOAD_LEN, "ACK with payload");
    h = valid_header(GC_FRAME_HELLO);
    h.payload_len = GC_HELLO_SIZE - 8;
    EXPECT_H(h, GC_DECODE_BAD_PAYLOAD_LEN, "HELLO wrong size");
}

static void test_bad_rank(void)
{
    struct gc_frame_header h = valid_header(GC_FRAME_DATA);
    h.src_rank = GC_MAX_RANK + 1;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "DATA src_rank > max");
    h = valid_header(GC_FRAME_DATA);
    h.dst_rank = GC_MAX_RANK + 1;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "DATA dst_rank > max");
    h = valid_header(GC_FRAME_DATA);
    h.dst_rank = UINT32_MAX;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "DATA dst_rank all ones");
    h = valid_header(GC_FRAME_HELLO);
    h.src_rank = GC_MAX_RANK + 1;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "HELLO src_rank > max");
    h = valid_header(GC_FRAME_CREDIT);
    h.dst_rank = GC_MAX_RANK + 1;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "CREDIT dst_rank > max");
    h = valid_header(GC_FRAME_ERROR);
    h.src_rank = UINT32_MAX;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "ERROR src_rank all ones");
    /* The range check comes before the per-type field check. */
    h = valid_header(GC_FRAME_ACK);
    h.src_rank = GC_MAX_RANK + 1;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "ACK src_rank > max");
}

static void test_bad_msg_len(void)
{
    struct gc_frame_header h = valid_header(GC_FRAME_DATA);
    h.msg_len = GC_MAX_MESSAGE + 1;
    h.flags = 0;
    EXPECT_H(h, GC_DECODE_BAD_MSG_LEN, "DATA msg_len > max");
    h.msg_len = UINT64_MAX;
    EXPECT_H(h, GC_DECODE_BAD_MSG_LEN, "DATA msg_len all ones");
    h = valid_header(GC_FRAME_CREDIT);
    h.msg_len = GC_MAX_MESSAGE + 1;
    EXPECT_H(h, GC_DECODE_BAD_MSG_LEN, "CREDIT amount > max");

    /* The same through raw bytes at the spec's offset for msg_len. */
    uint8_t b[GC_HEADER_SIZE];
    h = valid_header(GC_FRAME_CREDIT);
    gc_header_encode(&h, b);
    wr64(b, O_MSG_LEN, GC_MAX_MESSAGE + 1);
    reseal(b);
    EXPECT_B(b, GC_DECODE_BAD_MSG_LEN, "raw CREDIT amount > max");
    wr64(b, O_MSG_LEN, GC_MAX_MESSAGE);
    reseal(b);
    EXPECT_B(b, GC_DECODE_OK, "raw CREDIT amount = max");
}

static void test_bad_chunk(void)
{
    struct gc_frame_header h = valid_header(GC_FRAME_DATA);
    h.msg_len = 100;
    h.payload_len = 0;
    h.chunk_offset = 101;
    h.flags = 0;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "offset > msg_len");
    h.chunk_offset = UINT64_MAX;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "offset all ones");
    h.chunk_offset = 95;
    h.payload_len = 10;
    h.flags = GC_FLAG_LAST_CHUNK;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "offset + payload > msg_len");
    h.chunk_offset = GC_MAX_MESSAGE;
    h.msg_len = GC_MAX_MESSAGE;
    h.payload_len = 1;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "chunk after the largest message");

    /* LAST_CHUNK exactly on the chunk that ends the message. */
    h = valid_header(GC_FRAME_DATA);
    h.flags = 0;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "final chunk without LAST_CHUNK");
    h.flags = GC_FLAG_RESENT;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "final resent chunk without LAST_CHUNK");
    h = valid_header(GC_FRAME_DATA);
    h.msg_len = 2000;
    h.flags = GC_FLAG_LAST_CHUNK;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "LAST_CHUNK on a first chunk");
    h = valid_header(GC_FRAME_DATA);
    h.msg_len = 0;
    h.payload_len = 0;
    h.flags = 0;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "empty message without LAST_CHUNK");

    /* Only a 0-byte message may have a 0-byte chunk. */
    h = valid_header(GC_FRAME_DATA);
    h.msg_len = 10;
    h.payload_len = 0;
    h.chunk_offset = 0;
    h.flags = 0;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "empty first chunk of non-empty msg");
    h.chunk_offset = 10;
    h.flags = GC_FLAG_LAST_CHUNK;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "empty final chunk of non-empty msg");
    h.chunk_offset = 5;
    h.flags = 0;
    EXPECT_H(h, GC_DECODE_BAD_CHUNK, "empty middle chunk");
}

static void test_field_not_allowed(void)
{
    for (unsigned t = 1; t <= GC_FRAME_TYPE_MAX; t++) {
        for (int f = 0; f < FLD_COUNT; f++) {
            if (rules[t].fields & BIT(f))
                continue;
            /* 1 is in range for every field, so only "must be 0" fails. */
            struct gc_frame_header h = valid_header(t);
            set_field(&h, (enum field)f, 1);
            char what[64];
            snprintf(what, sizeof what, "%s with %s", gc_frame_type_name(t),
                     field_names[f]);
            expect_header(&h, GC_DECODE_BAD_FIELD, __LINE__, what);
            /* Large values in the same field are rejected too. */
            set_field(&h, (enum field)f,
                      f == FLD_SRC || f == FLD_DST ? GC_MAX_RANK
                      : f == FLD_MSG_LEN           ? GC_MAX_MESSAGE
                                                   : UINT32_MAX);
            expect_header(&h, GC_DECODE_BAD_FIELD, __LINE__, what);
        }
    }
    struct gc_frame_header h = valid_header(GC_FRAME_ACK);
    h.tag = 5;
    EXPECT_H(h, GC_DECODE_BAD_FIELD, "tag on ACK");
    h = valid_header(GC_FRAME_PING);
    h.msg_len = 1;
    EXPECT_H(h, GC_DECODE_BAD_FIELD, "msg_len on PING");
    h = valid_header(GC_FRAME_BYE);
    h.tag = -1;
    EXPECT_H(h, GC_DECODE_BAD_FIELD, "negative tag on BYE");
}

static void test_error_code(void)
{
    static const int32_t bad[] = {0, GC_ERR_MAX + 1, -1, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gc_frame_header h = valid_header(GC_FRAME_ERROR);
        h.tag = bad[i];
        expect_header(&h, GC_DECODE_BAD_FIELD, __LINE__, "ERROR code");
    }
}

/* When several things are wrong, the first check in spec order reports. */
static void test_check_order(void)
{
    uint8_t b[GC_HEADER_SIZE];
    struct gc_frame_header h = valid_header(GC_FRAME_DATA);
    gc_header_encode(&h, b);
    b[O_MAGIC] ^= 1;
    b[O_TYPE] = 0;
    EXPECT_B(b, GC_DECODE_BAD_MAGIC, "magic before checksum");
    gc_header_encode(&h, b);
    b[O_VERSION] = 0;
    EXPECT_B(b, GC_DECODE_BAD_CHECKSUM, "checksum before version");
    reseal(b);
    b[O_TYPE] = 0;
    reseal(b);
    EXPECT_B(b, GC_DECODE_BAD_VERSION, "version before type");

    h = valid_header(GC_FRAME_ACK);
    h.flags = 0x8000;
    h.payload_len = 1;
    EXPECT_H(h, GC_DECODE_BAD_FLAGS, "flags before payload_len");
    h.flags = 0;
    h.dst_rank = UINT32_MAX;
    EXPECT_H(h, GC_DECODE_BAD_PAYLOAD_LEN, "payload_len before rank");
    h.payload_len = 0;
    h.msg_len = UINT64_MAX;
    EXPECT_H(h, GC_DECODE_BAD_RANK, "rank before msg_len");
    h.dst_rank = 0;
    EXPECT_H(h, GC_DECODE_BAD_MSG_LEN, "msg_len before field");
}

static void test_names(void)
{
    const char *seen[GC_DECODE_BAD_FIELD + 1];
    int distinct = 1;
    for (int s = 0; s <= GC_DECODE_BAD_FIELD; s++) {
        seen[s] = gc_decode_status_str((enum gc_decode_status)s);
        for (int j = 0; j < s; j++)
            distinct &= strcmp(seen[j], seen[s]) != 0;
    }
    CHECK(distinct);
    CHECK(strcmp(gc_decode_status_str(GC_DECODE_OK), "ok") == 0);
    CHECK(strcmp(gc_decode_status_str(
                     (enum gc_decode_status)(GC_DECODE_BAD_FIELD + 1)),
                 "unknown decode status") == 0);

    static const char *const types[] = {
        NULL,     "HELLO", "AUTH", "AUTH_OK", "DATA", "ACK",
        "CREDIT", "PING",  "PONG", "ERROR",   "BYE",  "JOB",
    };
    for (unsigned t = 1; t <= GC_FRAME_TYPE_MAX; t++)
        CHECK_AT(strcmp(gc_frame_type_name(t), types[t]) == 0, __LINE__,
                 "type %u name", t);

    static const char *const codes[] = {
        "none",     "bad-frame",      "version",          "auth",
        "bad-rank", "duplicate-rank", "peer-unreachable", "shutdown",
        "protocol", "internal",       "job-ended",
    };
    for (unsigned c = 0; c <= GC_ERR_MAX; c++)
        CHECK_AT(strcmp(gc_error_code_name(c), codes[c]) == 0, __LINE__,
                 "error code %u name", c);
    CHECK(strcmp(gc_error_code_name(GC_ERR_MAX + 1), "unknown") == 0);
}

/* ---- HELLO payload ---------------------------------------------------- */

static struct gc_hello sample_hello(void)
{
    struct gc_hello hello = {
        .version_min = GC_PROTO_VERSION_MIN,
        .version_max = 0xffff,
        .capabilities = GC_CAPS_ALL,
        .role = GC_ROLE_RELAY,
        .stream_index = 7,
        .stream_count = 8,
        .max_chunk = GC_MAX_PAYLOAD,
        .epoch = UINT64_MAX,
        .credit = 0x0123456789abcdefull,
    };
    for (size_t i = 0; i < GC_NONCE_SIZE; i++)
        hello.nonce[i] = (uint8_t)(0xa0 + i);
    memset(hello.name, 'n', GC_NAME_MAX); /* longest legal name */
    hello.name[GC_NAME_MAX] = '\0';
    return hello;
}

static int hello_equal(const struct gc_hello *a, const struct gc_hello *b)
{
    return a->version_min == b->version_min &&
           a->version_max == b->version_max &&
           a->capabilities == b->capabilities && a->role == b->role &&
           a->stream_index == b->stream_index &&
           a->stream_count == b->stream_count && a->max_chunk == b->max_chunk &&
           a->epoch == b->epoch && a->credit == b->credit &&
           memcmp(a->nonce, b->nonce, GC_NONCE_SIZE) == 0 &&
           strcmp(a->name, b->name) == 0;
}

static void test_hello(void)
{
    CHECK(GC_HELLO_SIZE == 136);
    struct gc_hello in = sample_hello(), out;
    uint8_t buf[GC_HELLO_SIZE + 16];
    CHECK(gc_hello_encode(&in, buf, sizeof buf) == GC_HELLO_SIZE);
    CHECK(gc_hello_decode(buf, GC_HELLO_SIZE, &out) == 0 &&
          hello_equal(&in, &out));

    /* Layout from the spec. */
    CHECK(rd16(buf, 0) == in.version_min && rd16(buf, 2) == in.version_max);
    CHECK(rd32(buf, 4) == in.capabilities && rd32(buf, 8) == in.role);
    CHECK(rd32(buf, 12) == in.stream_index && rd32(buf, 16) == in.stream_count);
    CHECK(rd32(buf, 20) == in.max_chunk);
    CHECK(rd64(buf, 24) == in.epoch && rd64(buf, 32) == in.credit);
    CHECK(memcmp(buf + 40, in.nonce, GC_NONCE_SIZE) == 0);
    CHECK(memcmp(buf + 72, in.name, GC_NAME_MAX) == 0 && buf[135] == 0);

    /* A rank's HELLO: zeros, short name, padded with NULs. */
    struct gc_hello rank = {.version_min = 1, .version_max = 1, .role = 1};
    snprintf(rank.name, sizeof rank.name, "r");
    CHECK(gc_hello_encode(&rank, buf, GC_HELLO_SIZE) == GC_HELLO_SIZE);
    int padded = buf[72] == 'r';
    for (size_t i = 73; i < GC_HELLO_SIZE; i++)
        padded &= buf[i] == 0;
    CHECK(padded);
    CHECK(gc_hello_decode(buf, GC_HELLO_SIZE, &out) == 0 &&
          hello_equal(&rank, &out));
    CHECK(gc_hello_encode(&rank, buf, GC_HELLO_SIZE - 1) == 0);

    /* An over-long name in the struct is truncated, never overruns. */
    struct gc_hello longname = sample_hello();
    memset(longname.name, 'x', sizeof longname.name);
    CHECK(gc_hello_encode(&longname, buf, GC_HELLO_SIZE) == GC_HELLO_SIZE);
    CHECK(gc_hello_decode(buf, GC_HELLO_SIZE, &out) == 0 &&
          strlen(out.name) == GC_NAME_MAX);

    /* Rejections. */
    gc_hello_encode(&in, buf, sizeof buf);
    CHECK(gc_hello_decode(buf, GC_HELLO_SIZE - 1, &out) == -1);
    CHECK(gc_hello_decode(buf, GC_HELLO_SIZE + 1, &out) == -1);
    CHECK(gc_hello_decode(buf, 0, &out) == -1);

    uint8_t bad[GC_HELLO_SIZE];
    memcpy(bad, buf, GC_HELLO_SIZE);
    memset(bad + 72, 'z', GC_NAME_MAX + 1);
    CHECK(gc_hello_decode(bad, GC_HELLO_SIZE, &out) == -1);

    static const uint32_t roles[] = {0, 3, UINT32_MAX};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        memcpy(bad, buf, GC_HELLO_SIZE);
        wr32(bad, 8, roles[i]);
        CHECK_AT(gc_hello_decode(bad, GC_HELLO_SIZE, &out) == -1, __LINE__,
                 "role %u accepted", roles[i]);
    }
    memcpy(bad, buf, GC_HELLO_SIZE);
    wr32(bad, 8, GC_ROLE_RANK);
    CHECK(gc_hello_decode(bad, GC_HELLO_SIZE, &out) == 0 &&
          out.role == GC_ROLE_RANK);

    memcpy(bad, buf, GC_HELLO_SIZE);
    wr16(bad, 0, 2);
    wr16(bad, 2, 1);
    CHECK(gc_hello_decode(bad, GC_HELLO_SIZE, &out) == -1);
    wr16(bad, 0, 2);
    wr16(bad, 2, 2);
    CHECK(gc_hello_decode(bad, GC_HELLO_SIZE, &out) == 0 &&
          out.version_min == 2 && out.version_max == 2);

    /* Unknown capability bits are carried, not rejected (they AND away). */
    memcpy(bad, buf, GC_HELLO_SIZE);
    wr32(bad, 4, UINT32_MAX);
    CHECK(gc_hello_decode(bad, GC_HELLO_SIZE, &out) == 0 &&
          out.capabilities == UINT32_MAX);
}

/* ---- job-token HMAC --------------------------------------------------- */

static void test_auth_mac(void)
{
    const uint8_t token[] = "0123456789abcdef0123456789abcdef";
    const size_t token_len = sizeof token - 1;
    uint8_t ni[GC_NONCE_SIZE], nr[GC_NONCE_SIZE];
    for (size_t i = 0; i < GC_NONCE_SIZE; i++) {
        ni[i] = (uint8_t)i;
        nr[i] = (uint8_t)(255 - i);
    }
    uint8_t base[GC_MAC_SIZE], again[GC_MAC_SIZE], other[GC_MAC_SIZE];
    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_INITIATOR, ni, nr, 5,
                      base) == 0);
    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_INITIATOR, ni, nr, 5,
                      again) == 0);
    CHECK(memcmp(base, again, GC_MAC_SIZE) == 0);
    CHECK(gc_auth_mac_equal(base, again) == 1);

    /* Independent computation of the construction the spec prescribes. */
    uint8_t msg[128];
    size_t n = strlen(GC_AUTH_LABEL_INITIATOR);
    memcpy(msg, GC_AUTH_LABEL_INITIATOR, n);
    memcpy(msg + n, ni, GC_NONCE_SIZE);
    memcpy(msg + n + GC_NONCE_SIZE, nr, GC_NONCE_SIZE);
    wr32(msg, n + 2 * GC_NONCE_SIZE, 5);
    unsigned int len = 0;
    CHECK(HMAC(EVP_sha256(), token, (int)token_len, msg,
               n + 2 * GC_NONCE_SIZE + 4, other, &len) != NULL &&
          len == GC_MAC_SIZE && memcmp(other, base, GC_MAC_SIZE) == 0);

    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_RESPONDER, ni, nr, 5,
                      other) == 0 &&
          !gc_auth_mac_equal(base, other));
    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_INITIATOR, nr, ni, 5,
                      other) == 0 &&
          !gc_auth_mac_equal(base, other));
    uint8_t ni2[GC_NONCE_SIZE];
    memcpy(ni2, ni, sizeof ni2);
    ni2[GC_NONCE_SIZE - 1] ^= 1;
    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_INITIATOR, ni2, nr, 5,
                      other) == 0 &&
          !gc_auth_mac_equal(base, other));
    uint8_t nr2[GC_NONCE_SIZE];
    memcpy(nr2, nr, sizeof nr2);
    nr2[0] ^= 0x80;
    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_INITIATOR, ni, nr2, 5,
                      other) == 0 &&
          !gc_auth_mac_equal(base, other));
    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_INITIATOR, ni, nr, 6,
                      other) == 0 &&
          !gc_auth_mac_equal(base, other));
    CHECK(gc_auth_mac(token, token_len, GC_AUTH_LABEL_INITIATOR, ni, nr,
                      5u | 0x01000000u, other) == 0 &&
          !gc_auth_mac_equal(base, other));
    CHECK(gc_auth_mac(token, token_len - 1, GC_AUTH_LABEL_INITIATOR, ni, nr, 5,
                      other) == 0 &&
          !gc_auth_mac_equal(base, other));
    uint8_t token2[sizeof token];
    memcpy(token2, token, sizeof token2);
    token2[0] ^= 1;
    CHECK(gc_auth_mac(token2, token_len, GC_AUTH_LABEL_INITIATOR, ni, nr, 5,
                      other) == 0 &&
          !gc_auth_mac_equal(base, other));

    /* Equality must look at every byte, first and last included. */
    memcpy(other, base, GC_MAC_SIZE);
    other[0] ^= 1;
    CHECK(gc_auth_mac_equal(base, other) == 0);
    memcpy(other, base, GC_MAC_SIZE);
    other[GC_MAC_SIZE - 1] ^= 0x80;
    CHECK(gc_auth_mac_equal(base, other) == 0);

    char long_label[80];
    memset(long_label, 'l', sizeof long_label - 1);
    long_label[sizeof long_label - 1] = '\0';
    CHECK(gc_auth_mac(token, token_len, long_label, ni, nr, 5, other) == -1);

    uint8_t r1[GC_NONCE_SIZE], r2[GC_NONCE_SIZE];
    CHECK(gc_random_bytes(r1, sizeof r1) == 0 &&
          gc_random_bytes(r2, sizeof r2) == 0 &&
          memcmp(r1, r2, sizeof r1) != 0);
}

/* ---- ERROR frame builder ---------------------------------------------- */

static void test_error_frame(void)
{
    static uint8_t buf[GC_HEADER_SIZE + GC_MAX_CONTROL_PAYLOAD + 64];
    struct gc_frame_header h;

    size_t n = gc_error_frame(7, GC_ERR_AUTH, "bad token", buf, sizeof buf);
    CHECK(n == GC_HEADER_SIZE + 9);
    CHECK(gc_header_decode(buf, &h) == GC_DECODE_OK &&
          h.type == GC_FRAME_ERROR && h.job_id == 7 && h.tag == GC_ERR_AUTH &&
          h.payload_len == 9 && h.src_rank == 0 && h.dst_rank == 0);
    CHECK(memcmp(buf + GC_HEADER_SIZE, "bad token", 9) == 0);

    n = gc_error_frame(1, GC_ERR_SHUTDOWN, "", buf, sizeof buf);
    CHECK(n == GC_HEADER_SIZE);
    CHECK(gc_header_decode(buf, &h) == GC_DECODE_OK && h.payload_len == 0 &&
          h.tag == GC_ERR_SHUTDOWN);

    /* Text is cut to the buffer and never beyond the control limit. */
    n = gc_error_frame(1, GC_ERR_INTERNAL, "abcdefgh", buf, GC_HEADER_SIZE + 4);
    CHECK(n == GC_HEADER_SIZE + 4);
    CHECK(gc_header_decode(buf, &h) == GC_DECODE_OK && h.payload_len == 4 &&
          memcmp(buf + GC_HEADER_SIZE, "abcd", 4) == 0);
    CHECK(gc_error_frame(1, GC_ERR_INTERNAL, "x", buf, GC_HEADER_SIZE - 1) ==
          0);

    static char big[GC_MAX_CONTROL_PAYLOAD + 100];
    memset(big, 'e', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    n = gc_error_frame(1, GC_ERR_MAX, big, buf, sizeof buf);
    CHECK(n == GC_HEADER_SIZE + GC_MAX_CONTROL_PAYLOAD);
    CHECK(gc_header_decode(buf, &h) == GC_DECODE_OK &&
          h.payload_len == GC_MAX_CONTROL_PAYLOAD && h.tag == GC_ERR_MAX);
}

/* ---- gc_parse_size ----------------------------------------------------- */

static void test_parse_size(void)
{
    static const struct {
        const char *text;
        uint64_t value;
    } good[] = {
        {"0", 0},
        {"1", 1},
        {"100B", 100},
        {"4K", 4096},
        {"4k", 4096},
        {"4KB", 4096},
        {"4KiB", 4096},
        {"16M", 16ull << 20},
        {"512MiB", 512ull << 20},
        {"1G", 1ull << 30},
        {"1g", 1ull << 30},
        {"18446744073709551615", UINT64_MAX},
        {"17179869183G", UINT64_MAX - (1ull << 30) + 1},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 12345;
        int rc = gc_parse_size(good[i].text, &v);
        CHECK_AT(rc == 0 && v == good[i].value, __LINE__,
                 "gc_parse_size(\"%s\") rc=%d value=%llu", good[i].text, rc,
                 (unsigned long long)v);
    }
    static const char *const bad[] = {
        "",
        "K",
        "12X",
        "-1",
        "+1",
        " 1",
        "1 K",
        "4KBB",
        "4iB",
        "1T",
        "99999999999999999999",
        "18446744073709551615G",
        "17179869184G",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 0;
        CHECK_AT(gc_parse_size(bad[i], &v) == -1, __LINE__,
                 "gc_parse_size(\"%s\") accepted", bad[i]);
    }
    uint64_t v = 0;
    CHECK(gc_parse_size(NULL, &v) == -1);
}

/* ---- gc_endpoint_parse ------------------------------------------------- */

static void test_endpoint(void)
{
    struct gc_endpoint ep;
    char err[128], text[128];

    CHECK(gc_endpoint_parse("unix:/p", &ep, err, sizeof err) == 0 &&
          ep.family == AF_UNIX &&
          strcmp(((struct sockaddr_un *)&ep.addr)->sun_path, "/p") == 0);
    gc_endpoint_format(&ep, text, sizeof text);
    CHECK(strcmp(text, "unix:/p") == 0);
    CHECK(gc_endpoint_parse("/p", &ep, err, sizeof err) == 0 &&
          ep.family == AF_UNIX &&
          strcmp(((struct sockaddr_un *)&ep.addr)->sun_path, "/p") == 0);

    CHECK(gc_endpoint_parse("127.0.0.1:80", &ep, err, sizeof err) == 0 &&
          ep.family == AF_INET &&
          ntohs(((struct sockaddr_in *)&ep.addr)->sin_port) == 80 &&
          ntohl(((struct sockaddr_in *)&ep.addr)->sin_addr.s_addr) ==
              0x7f000001u);
    gc_endpoint_format(&ep, text, sizeof text);
    CHECK(strcmp(text, "127.0.0.1:80") == 0);

    CHECK(gc_endpoint_parse("[::1]:80", &ep, err, sizeof err) == 0 &&
          ep.family == AF_INET6 &&
          ntohs(((struct sockaddr_in6 *)&ep.addr)->sin6_port) == 80);
    gc_endpoint_format(&ep, text, sizeof text);
    CHECK(strcmp(text, "[::1]:80") == 0);

    CHECK(gc_endpoint_parse("127.0.0.1:0", &ep, NULL, 0) == 0);
    CHECK(gc_endpoint_parse("127.0.0.1:65535", &ep, NULL, 0) == 0);

    static const char *const bad[] = {
        "nocolon",       "host:", "host:99999", "unix:",   "127.0.0.1:-1",
        "127.0.0.1:80x", ":80",   "[::1]80",    "[::1:80", "127.0.0.1:65536",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = gc_endpoint_parse(bad[i], &ep, err, sizeof err);
        CHECK_AT(rc == -1 && err[0] != '\0', __LINE__,
                 "gc_endpoint_parse(\"%s\") rc=%d err='%s'", bad[i], rc, err);
    }

    /* A path that does not fit sun_path must be refused, not truncated. */
    char long_path[sizeof((struct sockaddr_un *)0)->sun_path + 8];
    memset(long_path, 'a', sizeof long_path - 1);
    long_path[0] = '/';
    long_path[sizeof long_path - 1] = '\0';
    CHECK(gc_endpoint_parse(long_path, &ep, err, sizeof err) == -1);
    CHECK(gc_endpoint_parse("unix:", &ep, NULL, 0) == -1);
}

/* ---- JOB payload (service links) --------------------------------------- */

static struct gc_job_frame sample_job(void)
{
    struct gc_job_frame job = {.op = GC_JOB_ANNOUNCE,
                               .site_count = 3,
                               .job_credit = 0x0102030405060708ull};
    for (unsigned i = 0; i < GC_JOB_HASH_SIZE; i++)
        job.token_hash[i] = (uint8_t)(0xa0 + i);
    static const char *const names[] = {"north", "south", "east"};
    for (unsigned i = 0; i < 3; i++) {
        snprintf(job.sites[i].name, sizeof job.sites[i].name, "%s", names[i]);
        job.sites[i].first_rank = 4 * i;
        job.sites[i].rank_count = 4;
    }
    job.sites[2].rank_count = GC_MAX_RANK + 1 - 8; /* up to the last rank */
    return job;
}

static void test_job_frame(void)
{
    uint8_t buf[GC_MAX_CONTROL_PAYLOAD];
    struct gc_job_frame job = sample_job(), back;
    size_t len = gc_job_frame_encode(&job, buf, sizeof buf);
    CHECK(len == GC_JOB_FIXED_SIZE + 3 * GC_JOB_SITE_SIZE);
    /* The layout of docs/protocol.md §9, byte for byte. */
    CHECK(buf[0] == GC_JOB_ANNOUNCE && buf[1] == 3 && buf[2] == 0 &&
          buf[8] == 0x08 && buf[15] == 0x01 && buf[16] == 0xa0);
    CHECK(buf[GC_JOB_FIXED_SIZE + GC_JOB_SITE_SIZE] == 4 &&
          memcmp(buf + GC_JOB_FIXED_SIZE + 8, "north", 6) == 0);
    CHECK(gc_job_frame_decode(buf, len, &back) == 0);
    CHECK(back.op == job.op && back.site_count == 3 &&
          back.job_credit == job.job_credit &&
          memcmp(back.token_hash, job.token_hash, GC_JOB_HASH_SIZE) == 0);
    for (unsigned i = 0; i < 3; i++)
        CHECK(strcmp(back.sites[i].name, job.sites[i].name) == 0 &&
              back.sites[i].first_rank == job.sites[i].first_rank &&
              back.sites[i].rank_count == job.sites[i].rank_count);
    /* Every truncation and every extension is refused. */
    for (size_t n = 0; n < len; n++)
        CHECK_AT(gc_job_frame_decode(buf, n, &back) == -1, __LINE__,
                 "truncated to %zu", n);
    CHECK(gc_job_frame_decode(buf, len + 1, &back) == -1);

    struct gc_job_frame bad;
    bad = job;
    bad.sites[1].first_rank = 3; /* overlaps north's 0..3 */
    CHECK(gc_job_frame_encode(&bad, buf, sizeof buf) == 0);
    bad = job;
    snprintf(bad.sites[2].name, sizeof bad.sites[2].name, "north");
    CHECK(gc_job_frame_encode(&bad, buf, sizeof buf) == 0);
    bad = job;
    bad.sites[0].rank_count = 0;
    CHECK(gc_job_frame_encode(&bad, buf, sizeof buf) == 0);
    bad = job;
    bad.sites[2].rank_count++; /* one past the last grid rank */
    CHECK(gc_job_frame_encode(&bad, buf, sizeof buf) == 0);
    bad = job;
    bad.site_count = 0;
    CHECK(gc_job_frame_encode(&bad, buf, sizeof buf) == 0);
    bad = job;
    bad.op = 3;
    CHECK(gc_job_frame_encode(&bad, buf, sizeof buf) == 0);
    CHECK(gc_job_frame_encode(&job, buf, GC_JOB_FIXED_SIZE) == 0);

    /* Decoding checks the same rules on bytes a peer could send. */
    len = gc_job_frame_encode(&job, buf, sizeof buf);
    buf[GC_JOB_FIXED_SIZE + GC_JOB_SITE_SIZE] = 3; /* south starts at 3 */
    CHECK(gc_job_frame_decode(buf, len, &back) == -1);
    len = gc_job_frame_encode(&job, buf, sizeof buf);
    memset(buf + GC_JOB_FIXED_SIZE + 8, 'x', GC_NAME_MAX + 1); /* no NUL */
    CHECK(gc_job_frame_decode(buf, len, &back) == -1);
    len = gc_job_frame_encode(&job, buf, sizeof buf);
    buf[4] = 1; /* reserved */
    CHECK(gc_job_frame_decode(buf, len, &back) == -1);
    len = gc_job_frame_encode(&job, buf, sizeof buf);
    buf[1] = GC_JOB_SITES_MAX + 1;
    CHECK(gc_job_frame_decode(buf, len, &back) == -1);

    /* A withdrawal carries its reason instead of sites. */
    struct gc_job_frame w = {.op = GC_JOB_WITHDRAW};
    snprintf(w.reason, sizeof w.reason, "removed by its launcher (alice)");
    len = gc_job_frame_encode(&w, buf, sizeof buf);
    CHECK(len == GC_JOB_FIXED_SIZE + strlen(w.reason));
    CHECK(gc_job_frame_decode(buf, len, &back) == 0 &&
          back.op == GC_JOB_WITHDRAW &&
          strcmp(back.reason, "removed by its launcher (alice)") == 0);
    buf[GC_JOB_FIXED_SIZE + 3] = '\0'; /* NUL inside the reason */
    CHECK(gc_job_frame_decode(buf, len, &back) == -1);
    w.site_count = 1;
    CHECK(gc_job_frame_encode(&w, buf, sizeof buf) == 0);

    uint8_t hash[GC_JOB_HASH_SIZE];
    /* SHA-256("abc"), FIPS 180-2 appendix B.1. */
    CHECK(gc_job_token_hash((const uint8_t *)"abc", 3, hash) == 0 &&
          hash[0] == 0xba && hash[1] == 0x78 && hash[31] == 0xad);
}

int main(void)
{
    test_roundtrip_all_types();
    test_spec_vectors();
    test_bad_magic();
    test_bad_version();
    test_bad_type();
    test_bad_flags();
    test_bad_reserved();
    test_single_byte_corruption();
    test_bad_payload_len();
    test_bad_rank();
    test_bad_msg_len();
    test_bad_chunk();
    test_field_not_allowed();
    test_error_code();
    test_check_order();
    test_names();
    test_hello();
    test_job_frame();
    test_auth_mac();
    test_error_frame();
    test_parse_size();
    test_endpoint();

    return unit_check_report("");
}
