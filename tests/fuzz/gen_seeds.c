/*
 * Writes the seed corpus for fuzz_frame: one valid frame (header plus
 * payload) of every type, a few DATA chunk shapes and a bare HELLO payload.
 * The seeds are produced by the real encoder at build time, so they stay
 * valid when the codec changes and no binary files live in the repository.
 *
 * usage: gen_seeds DIR   (DIR must exist)
 */
#include "gc_proto.h"

#include <stdio.h>
#include <string.h>

static int write_file(const char *dir, const char *name, const uint8_t *buf,
                      size_t len)
{
    int status = -1;
    char path[4096];
    FILE *f = NULL;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        fprintf(stderr, "gen_seeds: path too long: %s/%s\n", dir, name);
        goto cleanup;
    }
    f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        goto cleanup;
    }
    if (len > 0 && fwrite(buf, 1, len, f) != len) {
        perror(path);
        goto cleanup;
    }
    status = 0;
cleanup:
    if (f != NULL && fclose(f) != 0 && status == 0) {
        perror(path);
        status = -1;
    }
    return status;
}

/* Header followed by `payload_len` bytes of payload taken from `payload`. */
static int write_frame(const char *dir, const char *name,
                       const struct gc_frame_header *h, const uint8_t *payload)
{
    static uint8_t buf[GC_HEADER_SIZE + 4096];
    if (h->payload_len > sizeof buf - GC_HEADER_SIZE)
        return -1;
    gc_header_encode(h, buf);
    if (h->payload_len > 0)
        memcpy(buf + GC_HEADER_SIZE, payload, h->payload_len);
    return write_file(dir, name, buf, GC_HEADER_SIZE + h->payload_len);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int status = 0;

    struct gc_hello hello = {
        .version_min = GC_PROTO_VERSION_MIN,
        .version_max = GC_PROTO_VERSION,
        .capabilities = GC_CAPS_ALL,
        .role = GC_ROLE_RELAY,
        .stream_index = 1,
        .stream_count = 8,
        .max_chunk = 256 * 1024,
        .epoch = 0x1122334455667788ull,
        .credit = 8u << 20,
    };
    for (size_t i = 0; i < GC_NONCE_SIZE; i++)
        hello.nonce[i] = (uint8_t)(i * 7 + 1);
    snprintf(hello.name, sizeof hello.name, "alpha");
    uint8_t hello_buf[GC_HELLO_SIZE];
    gc_hello_encode(&hello, hello_buf, sizeof hello_buf);

    uint8_t payload[4096];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)i;
    static const char error_text[] = "authentication failed";

    struct gc_frame_header h = {.type = GC_FRAME_HELLO,
                                .job_id = 1,
                                .src_rank = 2,
                                .payload_len = GC_HELLO_SIZE};
    status |= write_frame(dir, "hello.bin", &h, hello_buf);
    status |= write_file(dir, "hello-payload.bin", hello_buf, GC_HELLO_SIZE);

    h = (struct gc_frame_header){.type = GC_FRAME_AUTH,
                                 .job_id = 1,
                                 .src_rank = 2,
                                 .payload_len = GC_MAC_SIZE};
    status |= write_frame(dir, "auth.bin", &h, payload);
    h.type = GC_FRAME_AUTH_OK;
    status |= write_frame(dir, "auth-ok.bin", &h, payload);

    h = (struct gc_frame_header){.type = GC_FRAME_DATA,
                                 .flags = GC_FLAG_LAST_CHUNK,
                                 .job_id = 1,
                                 .src_rank = 0,
                                 .dst_rank = 2,
                                 .context_id = 3,
                                 .tag = 17,
                                 .payload_len = 64,
                                 .msg_seq = 4,
                                 .msg_len = 64,
                                 .link_seq = 1};
    status |= write_frame(dir, "data-whole.bin", &h, payload);
    h.flags = 0;
    h.msg_len = 1000;
    h.link_seq = 2;
    status |= write_frame(dir, "data-first.bin", &h, payload);
    h.flags = GC_FLAG_LAST_CHUNK | GC_FLAG_RESENT;
    h.chunk_offset = 1000 - 64;
    status |= write_frame(dir, "data-last-resent.bin", &h, payload);
    h = (struct gc_frame_header){.type = GC_FRAME_DATA,
                                 .flags = GC_FLAG_LAST_CHUNK,
                                 .job_id = 1,
                                 .dst_rank = 1};
    status |= write_frame(dir, "data-empty.bin", &h, payload);

    h = (struct gc_frame_header){
        .type = GC_FRAME_ACK, .job_id = 1, .link_seq = 42};
    status |= write_frame(dir, "ack.bin", &h, payload);
    h = (struct gc_frame_header){.type = GC_FRAME_CREDIT,
                                 .job_id = 1,
                                 .dst_rank = 3,
                                 .msg_len = 262144 + GC_HEADER_SIZE};
    status |= write_frame(dir, "credit.bin", &h, payload);
    h = (struct gc_frame_header){
        .type = GC_FRAME_PING, .job_id = 1, .msg_seq = 9};
    status |= write_frame(dir, "ping.bin", &h, payload);
    h.type = GC_FRAME_PONG;
    status |= write_frame(dir, "pong.bin", &h, payload);
    h = (struct gc_frame_header){.type = GC_FRAME_ERROR,
                                 .job_id = 1,
                                 .tag = GC_ERR_AUTH,
                                 .payload_len = sizeof error_text - 1};
    status |= write_frame(dir, "error.bin", &h, (const uint8_t *)error_text);
    h = (struct gc_frame_header){.type = GC_FRAME_BYE, .job_id = 1};
    status |= write_frame(dir, "bye.bin", &h, payload);

    return status == 0 ? 0 : 1;
}
