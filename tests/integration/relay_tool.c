/*
 * relay_tool: a test client for integration tests.  Every byte it sends is
 * a function of (source rank, destination rank, message sequence, offset),
 * so the receiver checks content, length and per-source order without
 * any side channel.
 *
 *   relay_tool send ENDPOINT TOKEN JOB RANK --to R[,R...] --sizes LIST
 *              [--stall-ms MS]
 *   relay_tool recv ENDPOINT TOKEN JOB RANK --expect N [--from R]
 *              [--sizes LIST] [--stall-ms MS]
 *
 * LIST is comma separated sizes (K/M/G suffixes) or random:COUNT:MAX:SEED.
 * `send` sends the whole list to each destination in turn; `recv` expects
 * N messages and, with --sizes, checks each source's i-th message has the
 * i-th size.  --stall-ms makes the receiver stop reading for a while after
 * connecting (backpressure tests), and the sender wait as long before its
 * first send (a session that breaks while idle).  Exit 0 only when
 * everything matched; the last line is "ok ..." or "FAIL: reason".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gc_relay_client.h"
#include "gc_util.h"

#define MAX_SIZES   4096
#define MAX_SOURCES 1024

static uint8_t pattern_byte(uint32_t src, uint32_t dst, uint64_t seq,
                            uint64_t offset)
{
    uint64_t x = (offset / 8) * 0x9e3779b97f4a7c15ull ^
                 (seq + 1) * 0xc2b2ae3d27d4eb4full ^ ((uint64_t)src << 40) ^
                 ((uint64_t)dst << 20);
    x ^= x >> 29;
    return (uint8_t)(x >> (8 * (offset % 8)));
}

static void fill(uint8_t *buf, uint64_t len, uint32_t src, uint32_t dst,
                 uint64_t seq)
{
    for (uint64_t i = 0; i < len; i++)
        buf[i] = pattern_byte(src, dst, seq, i);
}

static int parse_sizes(const char *text, uint64_t *sizes, int *count)
{
    *count = 0;
    if (strncmp(text, "random:", 7) == 0) {
        unsigned long n = 0, seed = 0;
        char max_text[32];
        if (sscanf(text + 7, "%lu:%31[^:]:%lu", &n, max_text, &seed) != 3 ||
            n > MAX_SIZES)
            return -1;
        uint64_t max;
        if (gc_parse_size(max_text, &max) != 0)
            return -1;
        srand((unsigned)seed);
        for (unsigned long i = 0; i < n; i++)
            sizes[(*count)++] =
                ((uint64_t)rand() * (uint64_t)RAND_MAX + (uint64_t)rand()) %
                (max + 1);
        return 0;
    }
    char *copy = strdup(text);
    int status = -1;
    for (char *tok = strtok(copy, ","); tok != NULL; tok = strtok(NULL, ",")) {
        if (*count >= MAX_SIZES || gc_parse_size(tok, &sizes[*count]) != 0)
            goto cleanup;
        (*count)++;
    }
    status = 0;
cleanup:
    free(copy);
    return status;
}

struct recv_state {
    uint32_t my_rank;
    uint64_t next_seq[MAX_SOURCES];
    const uint64_t *sizes;
    int size_count;
    long received;
    uint64_t bytes;
    int failed;
    char why[256];
};

static void *on_alloc(void *arg, const struct gc_rc_msg_info *info)
{
    (void)arg;
    (void)info;
    return NULL; /* library-allocated: exercises that path too */
}

static void on_complete(void *arg, const struct gc_rc_msg_info *info, void *buf,
                        int library_allocated)
{
    struct recv_state *st = arg;
    const uint8_t *bytes = buf;
    (void)library_allocated;
    st->received++;
    st->bytes += info->msg_len;
    if (st->failed)
        goto done;
    if (info->src_rank >= MAX_SOURCES || info->dst_rank != st->my_rank) {
        snprintf(st->why, sizeof st->why, "bad envelope src=%u dst=%u",
                 info->src_rank, info->dst_rank);
        st->failed = 1;
        goto done;
    }
    if (info->msg_seq != st->next_seq[info->src_rank]) {
        snprintf(st->why, sizeof st->why,
                 "order: from %u got seq %" PRIu64 ", expected %" PRIu64,
                 info->src_rank, info->msg_seq, st->next_seq[info->src_rank]);
        st->failed = 1;
        goto done;
    }
    st->next_seq[info->src_rank]++;
    if (st->size_count > 0) {
        uint64_t want = st->sizes[info->msg_seq % (uint64_t)st->size_count];
        if (info->msg_len != want) {
            snprintf(st->why, sizeof st->why,
                     "size: from %u seq %" PRIu64 " is %" PRIu64
                     " bytes, expected %" PRIu64,
                     info->src_rank, info->msg_seq, info->msg_len, want);
            st->failed = 1;
            goto done;
        }
    }
    if (info->tag != (int32_t)(info->msg_seq % 1000) ||
        info->context_id != info->src_rank + 100) {
        snprintf(st->why, sizeof st->why, "envelope tag/context mismatch");
        st->failed = 1;
        goto done;
    }
    for (uint64_t i = 0; i < info->msg_len; i++) {
        if (bytes[i] !=
            pattern_byte(info->src_rank, info->dst_rank, info->msg_seq, i)) {
            snprintf(st->why, sizeof st->why,
                     "content: from %u seq %" PRIu64
                     " differs at byte %" PRIu64,
                     info->src_rank, info->msg_seq, i);
            st->failed = 1;
            break;
        }
    }
done:
    free(buf);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: relay_tool send|recv ENDPOINT TOKEN JOB RANK "
            "[--to R,..] [--expect N] [--sizes LIST] [--stall-ms MS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 6)
        usage();
    const char *mode = argv[1];
    uint8_t token[GC_TOKEN_MAX];
    char err[512];
    int token_len =
        gc_token_read_file(argv[3], token, sizeof token, err, sizeof err);
    if (token_len < 0) {
        printf("FAIL: %s\n", err);
        return 1;
    }
    static uint64_t sizes[MAX_SIZES];
    int size_count = 0;
    uint32_t dests[64];
    int dest_count = 0;
    long expect = 0;
    long stall_ms = 0;
    for (int i = 6; i < argc; i++) {
        if (strcmp(argv[i], "--to") == 0 && i + 1 < argc) {
            char *copy = strdup(argv[++i]);
            for (char *t = strtok(copy, ","); t && dest_count < 64;
                 t = strtok(NULL, ","))
                dests[dest_count++] = (uint32_t)strtoul(t, NULL, 10);
            free(copy);
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            if (parse_sizes(argv[++i], sizes, &size_count) != 0) {
                printf("FAIL: bad --sizes\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
            expect = atol(argv[++i]);
        } else if (strcmp(argv[i], "--stall-ms") == 0 && i + 1 < argc) {
            stall_ms = atol(argv[++i]);
        } else {
            usage();
        }
    }

    static struct recv_state state;
    state.my_rank = (uint32_t)strtoul(argv[5], NULL, 10);
    state.sizes = sizes;
    state.size_count = size_count;
    struct gc_rc_options opt = {
        .endpoint = argv[2],
        .token = token,
        .token_len = (size_t)token_len,
        .job_id = (uint32_t)strtoul(argv[4], NULL, 10),
        .rank = state.my_rank,
        .on_alloc = on_alloc,
        .on_complete = on_complete,
        .cb_arg = &state,
    };
    struct gc_rc *rc = NULL;
    if (gc_rc_connect(&opt, &rc, err, sizeof err) != 0) {
        printf("FAIL: connect: %s\n", err);
        return 1;
    }

    int status = 1;
    if (strcmp(mode, "send") == 0) {
        uint64_t seq[64] = {0};
        if (stall_ms > 0)
            usleep((useconds_t)stall_ms * 1000);
        for (int d = 0; d < dest_count; d++) {
            for (int m = 0; m < size_count; m++) {
                uint8_t *buf = malloc(sizes[m] ? sizes[m] : 1);
                fill(buf, sizes[m], state.my_rank, dests[d], seq[d]);
                int rc_send =
                    gc_rc_send(rc, dests[d], state.my_rank + 100,
                               (int32_t)(seq[d] % 1000), buf, sizes[m]);
                free(buf);
                if (rc_send != 0) {
                    printf("FAIL: send: %s\n", gc_rc_error(rc));
                    goto cleanup;
                }
                seq[d]++;
            }
        }
        if (gc_rc_close(rc, 60000) != 0) {
            rc = NULL;
            printf("FAIL: close did not flush\n");
            goto cleanup;
        }
        rc = NULL;
        printf("ok sent=%d to %d destination(s)\n", size_count, dest_count);
        status = 0;
    } else if (strcmp(mode, "recv") == 0) {
        if (stall_ms > 0)
            usleep((useconds_t)stall_ms * 1000);
        while (state.received < expect && !state.failed) {
            if (gc_rc_progress(rc, 1000) < 0) {
                printf("FAIL: %s (code %d)\n", gc_rc_error(rc),
                       gc_rc_error_code(rc));
                goto cleanup;
            }
        }
        if (state.failed) {
            printf("FAIL: %s\n", state.why);
            goto cleanup;
        }
        printf("ok received=%ld bytes=%" PRIu64 " verified=yes\n",
               state.received, state.bytes);
        status = 0;
    } else {
        usage();
    }
cleanup:
    if (rc != NULL)
        gc_rc_close(rc, 1000);
    return status;
}
