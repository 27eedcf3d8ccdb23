/*
 * libFuzzer target for what tenants and peer services send a gridrelay
 * service: the control endpoint's registration body and request path
 * (relay/control_request.c) and the JOB frame (common/gc_proto.c).
 *
 * Random bytes rarely make a registration document with the right keys, or a
 * JOB payload whose sites pass the decoder's checks, so most of the input
 * is read as a structure and turned into those (structure-aware): the
 * first byte picks what, the rest drive the choices.
 *
 *   0  a registration body assembled from grammar pieces (keys, numbers
 *      at and past the bounds, hex tokens, names, nested lists, '@'
 *      directives), parsed by control_request_parse;
 *   1  a JOB frame built from fields, encoded by the real encoder, then
 *      mutated at chosen offsets and decoded;
 *   2  the bytes as they come, as a body and as a request path.
 *
 * Properties checked besides memory safety (a violation aborts):
 *   - a body with an '@' anywhere is refused, with the directive message,
 *     as the message names @include;
 *   - an accepted registration is within the limits the relay relies on:
 *     id nonzero, a token of 16..GC_TOKEN_MAX bytes, 1..GC_JOB_SITES_MAX
 *     sites with valid names, rank_total the sum of the sites' counts;
 *   - a JOB payload that decodes is a valid frame (it re-encodes and
 *     decodes to itself), and an encoded frame decodes to the frame it
 *     came from;
 *   - a path routed to a job names it in canonical decimal.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_request.h"
#include "gc_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fuzzer's bytes, consumed one choice at a time (0 once used up). */
struct input {
    const uint8_t *p;
    size_t left;
};

static unsigned take(struct input *in, unsigned bound)
{
    if (in->left == 0 || bound == 0)
        return 0;
    in->left--;
    return *in->p++ % bound;
}

static uint32_t take32(struct input *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | take(in, 256);
    return v;
}

/* ---- registration bodies ------------------------------------------------ */

static const char *const keys[] = {"job_id",     "token", "lease",
                                   "sites",      "name",  "first_rank",
                                   "rank_count", "other"};
static const char *const numbers[] = {"0",
                                      "1",
                                      "4",
                                      "86400",
                                      "86401",
                                      "16777215",
                                      "16777216",
                                      "4294967295",
                                      "4294967296",
                                      "-1",
                                      "0x10",
                                      "1L",
                                      "99999999999999999999",
                                      "1.5"};
static const char *const names[] = {"alpha", "beta", "gamma", "",
                                    "a b",   "x@y",  "\\x40", "n\"q"};
static const char *const junk[] = {"@include \"/\"\n",
                                   "@include \"/etc/passwd\"\n",
                                   "{",
                                   "}",
                                   "(",
                                   ")",
                                   ";",
                                   ",",
                                   "=",
                                   ":",
                                   "\n",
                                   "/* c */",
                                   "# c\n",
                                   "\"",
                                   "[",
                                   "]"};

struct text {
    char buf[8192];
    size_t len;
};

static void put(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n < sizeof t->buf) {
        memcpy(t->buf + t->len, s, n);
        t->len += n;
    }
    t->buf[t->len] = '\0';
}

static void put_value(struct text *t, struct input *in, int depth);

static void put_site(struct text *t, struct input *in, int depth)
{
    char num[32];
    put(t, "{ name = \"");
    put(t, names[take(in, sizeof names / sizeof names[0])]);
    put(t, "\"; first_rank = ");
    snprintf(num, sizeof num, "%u", take32(in) % 40);
    put(t, take(in, 4) ? num : numbers[take(in, 14)]);
    put(t, "; rank_count = ");
    snprintf(num, sizeof num, "%u", 1 + take32(in) % 20);
    put(t, take(in, 4) ? num : numbers[take(in, 14)]);
    put(t, "; ");
    if (take(in, 8) == 0)
        put_value(t, in, depth + 1);
    put(t, "}");
}

static void put_value(struct text *t, struct input *in, int depth)
{
    char hex[2 * GC_TOKEN_MAX + 8];
    unsigned n;
    switch (depth > 3 ? take(in, 2) : take(in, 6)) {
    case 0: put(t, numbers[take(in, 14)]); break;
    case 1:
        n = take(in, 2) ? 32 : take(in, 2 * GC_TOKEN_MAX + 4);
        for (unsigned i = 0; i < n; i++)
            hex[i] = "0123456789abcdefABCDEFg"[take(in, 23)];
        hex[n] = '\0';
        put(t, "\"");
        put(t, hex);
        put(t, "\"");
        break;
    case 2:
    case 3:
        put(t, "(");
        n = take(in, 18);
        for (unsigned i = 0; i < n; i++) {
            if (i > 0)
                put(t, ", ");
            put_site(t, in, depth);
        }
        put(t, ")");
        break;
    case 4:
        put(t, "{ ");
        put(t, keys[take(in, 8)]);
        put(t, " = ");
        put_value(t, in, depth + 1);
        put(t, "; }");
        break;
    default: put(t, junk[take(in, sizeof junk / sizeof junk[0])]); break;
    }
}

static int valid_name(const char *s)
{
    size_t len = strlen(s);
    return len > 0 && len <= GC_NAME_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_-") == len;
}

static void check_body(const char *text, size_t len)
{
    struct job_request jr;
    char err[512];
    int rc = control_request_parse(text, len, &jr, err, sizeof err);
    if (memchr(text, '\0', len) != NULL) {
        if (rc == 0)
            abort(); /* not text: refused before anything else */
        return;
    }
    if (memchr(text, '@', len) != NULL) {
        if (rc == 0 || strstr(err, "'@' directives") == NULL)
            abort();
        return;
    }
    if (rc != 0)
        return;
    if (jr.id == 0 || jr.token_len < 16 || jr.token_len > GC_TOKEN_MAX ||
        jr.site_count < 1 || jr.site_count > GC_JOB_SITES_MAX)
        abort();
    uint64_t total = 0;
    for (uint32_t i = 0; i < jr.site_count; i++) {
        if (!valid_name(jr.sites[i].name) || jr.sites[i].rank_count == 0)
            abort();
        total += jr.sites[i].rank_count;
    }
    if (total != jr.rank_total)
        abort();
}

static void fuzz_body(struct input *in)
{
    struct text t = {.len = 0};
    t.buf[0] = '\0';
    unsigned settings = 1 + take(in, 8);
    for (unsigned i = 0; i < settings; i++) {
        if (take(in, 16) == 0)
            put(&t, junk[take(in, sizeof junk / sizeof junk[0])]);
        put(&t, keys[take(in, 8)]);
        put(&t, take(in, 8) ? " = " : " : ");
        put_value(&t, in, 0);
        put(&t, ";\n");
    }
    check_body(t.buf, t.len);
}

/* ---- JOB frames --------------------------------------------------------- */

static void fuzz_job_frame(struct input *in)
{
    struct gc_job_frame f = {0}, back;
    uint8_t buf[GC_MAX_CONTROL_PAYLOAD], again[GC_MAX_CONTROL_PAYLOAD];
    f.op = (uint8_t)(take(in, 3) + (take(in, 16) == 0 ? 3 : 0));
    f.job_credit = (uint64_t)take32(in) << 32 | take32(in);
    for (unsigned i = 0; i < GC_JOB_HASH_SIZE; i++)
        f.token_hash[i] = (uint8_t)take(in, 256);
    if (f.op == GC_JOB_WITHDRAW) {
        unsigned n = take(in, GC_JOB_REASON_MAX + 4);
        for (unsigned i = 0; i < n && i < GC_JOB_REASON_MAX; i++)
            f.reason[i] = (char)(1 + take(in, 255));
    } else {
        f.site_count = (uint8_t)take(in, GC_JOB_SITES_MAX + 2);
        uint32_t next = take(in, 4);
        for (unsigned i = 0; i < f.site_count && i < GC_JOB_SITES_MAX; i++) {
            snprintf(f.sites[i].name, sizeof f.sites[i].name, "s%u",
                     take(in, 4) ? i : take(in, 3));
            f.sites[i].first_rank = take(in, 8) ? next : take32(in);
            f.sites[i].rank_count = take(in, 8) ? 1 + take(in, 64) : take32(in);
            next = f.sites[i].first_rank + f.sites[i].rank_count;
        }
    }
    size_t len = gc_job_frame_encode(&f, buf, sizeof buf);
    if (len == 0)
        return;
    /* What the encoder wrote, the decoder reads back unchanged. */
    if (gc_job_frame_decode(buf, len, &back) != 0 || back.op != f.op ||
        back.site_count != f.site_count || back.job_credit != f.job_credit ||
        memcmp(back.token_hash, f.token_hash, GC_JOB_HASH_SIZE) != 0 ||
        strcmp(back.reason, f.reason) != 0)
        abort();
    /* Then a peer's corruptions: bytes changed, the length cut or grown. */
    unsigned edits = take(in, 6);
    for (unsigned i = 0; i < edits; i++)
        buf[take(in, (unsigned)len)] = (uint8_t)take(in, 256);
    if (take(in, 4) == 0)
        len = take(in, (unsigned)len + 1);
    if (gc_job_frame_decode(buf, len, &back) != 0)
        return;
    /* What decodes is a valid frame: it encodes, and decodes to itself
     * (bytes after a name's NUL are padding, so compare by meaning). */
    struct gc_job_frame third;
    size_t len2 = gc_job_frame_encode(&back, again, sizeof again);
    if (len2 == 0 || gc_job_frame_decode(again, len2, &third) != 0 ||
        third.op != back.op || third.site_count != back.site_count ||
        third.job_credit != back.job_credit ||
        strcmp(third.reason, back.reason) != 0)
        abort();
    for (unsigned i = 0; i < back.site_count; i++)
        if (strcmp(third.sites[i].name, back.sites[i].name) != 0 ||
            third.sites[i].first_rank != back.sites[i].first_rank ||
            third.sites[i].rank_count != back.sites[i].rank_count)
            abort();
}

/* ---- raw bytes ---------------------------------------------------------- */

static void fuzz_raw(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    check_body(text, size);
    uint32_t id = 0;
    enum control_route r = control_route_parse(text, &id);
    if (r == ROUTE_JOB || r == ROUTE_RENEW) {
        char canonical[64];
        snprintf(canonical, sizeof canonical, "/jobs/%u%s", id,
                 r == ROUTE_RENEW ? "/renew" : "");
        /* Leading zeros are the only other spelling accepted. */
        const char *digits = text + 6;
        while (*digits == '0' && digits[1] >= '0' && digits[1] <= '9')
            digits++;
        char shown[80];
        snprintf(shown, sizeof shown, "/jobs/%s", digits);
        if (strcmp(shown, canonical) != 0)
            abort();
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct input in = {data + 1, size - 1};
    switch (data[0] % 3) {
    case 0: fuzz_body(&in); break;
    case 1: fuzz_job_frame(&in); break;
    default: fuzz_raw(data + 1, size - 1); break;
    }
    return 0;
}
