/*
 * libFuzzer target for the wire-protocol decoders.
 *
 * The input is treated the way a relay treats bytes from a socket: the
 * first GC_HEADER_SIZE bytes as a frame header, the rest as its payload.
 * Besides memory safety (ASan/UBSan) the target checks two properties the
 * protocol relies on:
 *   - the header encoding is canonical: a header that decodes re-encodes to
 *     exactly the same 72 bytes and decodes to the same fields;
 *   - a HELLO payload that decodes survives encode/decode unchanged.
 * A violation calls abort(), which libFuzzer reports as a crash.
 *
 * Random mutations almost never keep the CRC-32 right, so each header is
 * also decoded a second time with its checksum recomputed; that lets the
 * fuzzer reach the field checks behind the checksum.
 */
#include "gc_proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Compare by meaning: bytes after the name's NUL are not part of it. */
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

static void check_header(const uint8_t *data)
{
    struct gc_frame_header h;
    enum gc_decode_status st = gc_header_decode(data, &h);
    /* Every verdict must have a printable name (used in ERROR texts). */
    if (gc_decode_status_str(st) == NULL)
        abort();
    if (st != GC_DECODE_OK)
        return;
    if (gc_frame_type_name(h.type) == NULL)
        abort();

    uint8_t again[GC_HEADER_SIZE];
    gc_header_encode(&h, again);
    if (memcmp(again, data, GC_HEADER_SIZE) != 0)
        abort();
    struct gc_frame_header h2;
    if (gc_header_decode(again, &h2) != GC_DECODE_OK ||
        !gc_header_equal(&h, &h2))
        abort();
    if (h.type == GC_FRAME_ERROR &&
        (h.tag <= 0 || h.tag > GC_ERR_MAX ||
         strcmp(gc_error_code_name((unsigned)h.tag), "unknown") == 0))
        abort();
}

static void check_hello(const uint8_t *data, size_t size)
{
    struct gc_hello hello;
    if (gc_hello_decode(data, size, &hello) != 0)
        return;
    if (memchr(hello.name, '\0', sizeof hello.name) == NULL)
        abort();
    uint8_t buf[GC_HELLO_SIZE];
    if (gc_hello_encode(&hello, buf, sizeof buf) != GC_HELLO_SIZE)
        abort();
    struct gc_hello again;
    if (gc_hello_decode(buf, sizeof buf, &again) != 0 ||
        !hello_equal(&hello, &again))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The whole input as a HELLO payload covers every wrong length. */
    check_hello(data, size);
    if (size < GC_HEADER_SIZE)
        return 0;
    check_header(data);

    uint8_t sealed[GC_HEADER_SIZE];
    memcpy(sealed, data, GC_HEADER_SIZE);
    uint32_t crc = (uint32_t)crc32(0L, sealed, GC_HEADER_SIZE - 4);
    for (int i = 0; i < 4; i++)
        sealed[GC_HEADER_SIZE - 4 + i] = (uint8_t)(crc >> (8 * i));
    check_header(sealed);

    /* The payload after the header, as a relay would hand it on. */
    const uint8_t *payload = data + GC_HEADER_SIZE;
    size_t payload_size = size - GC_HEADER_SIZE;
    if (data[5] == GC_FRAME_HELLO)
        check_hello(payload, payload_size);
    return 0;
}
