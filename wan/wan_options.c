#include "wan_options.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "gc_util.h"

#define MAX_DELAY_NS (10 * 1000000000ull)
#define MIN_RATE_BPS 1000ull
#define MAX_RATE_BPS 100000000000ull
#define MAX_QUEUE    (1ull << 30)
#define MIN_MTU      68u
#define MAX_MTU      (65535u - WAN_ETH_HLEN) /* a TAP's own limit */
/* Without a rate limit nothing queues at a bottleneck; this bounds the
 * bytes each direction holds while they are delayed. */
#define UNLIMITED_QUEUE (64ull << 20)
/* The default queue is never shorter than this many full frames, so short
 * delays at low rates still absorb a TCP burst. */
#define MIN_DEFAULT_QUEUE_FRAMES 100u

void wan_options_usage(FILE *out)
{
    fprintf(
        out,
        "usage: gridwan --ns NAME1,NAME2[,...] [OPTIONS]\n"
        "\n"
        "Joins network namespaces by an emulated WAN: one TAP device 'wan0'\n"
        "per namespace, addresses from --subnet (site i gets the (i+1)-th),\n"
        "and a user-space learning switch between the TAPs that delays,\n"
        "rate-limits and drops frames per direction (ordered pair of sites).\n"
        "Namespaces that do not exist are created and deleted on exit;\n"
        "existing ones are used and kept.  Needs CAP_NET_ADMIN and\n"
        "CAP_SYS_ADMIN (root).  See docs/gridwan.md.\n"
        "\n"
        "  --ns A,B[,...]     namespaces, one site each: 2..%d names of at\n"
        "                     most %d letters, digits, '_', '-', '.'\n"
        "  --delay T          one-way delay (default 0ms)\n"
        "  --jitter T         uniform in [-T, +T] added to the delay, at most\n"
        "                     the delay; frames are never reordered\n"
        "  --rate R           bottleneck rate per direction, whole Ethernet\n"
        "                     frames counted (default: no limit)\n"
        "  --loss P           random loss per frame, in percent (0.1%% or "
        "0.1)\n"
        "  --queue BYTES      bottleneck queue per direction, tail drop\n"
        "                     (K, M, G suffixes are powers of 1024); default\n"
        "                     rate x 2 x delay, at least %u full frames;\n"
        "                     without --rate it bounds the bytes in flight\n"
        "                     (default %llu MiB)\n"
        "  --queue-ms T       queue as a time at --rate (a bare number is ms)\n"
        "  --mtu N            MTU of the TAPs, %u..%u (default 1500)\n"
        "  --subnet A.B.C.D/L IPv4 subnet, L in 8..30 (default 10.77.0.0/24)\n"
        "  --seed N           seed of the loss and jitter draws (default 1)\n"
        "  --duration T       stop after T (a bare number is seconds)\n"
        "  --rt-priority N    run under SCHED_FIFO at priority N (1..99) for\n"
        "                     the most exact delays on a busy machine; by\n"
        "                     default gridwan only asks for short time\n"
        "                     slices and keeps its fair share\n"
        "  --help             this text\n"
        "\n"
        "Times: ns, us, ms, s (20ms, 1.5ms).  Rates: bit, kbit, mbit, gbit\n"
        "(powers of 1000).  Prints 'gridwan: ready ...' when the links are\n"
        "up, and its counters on exit (SIGINT, SIGTERM, SIGHUP, --duration).\n"
        "Exit status: 0 after a clean stop, 1 on a runtime error, 2 on a\n"
        "usage error.\n",
        WAN_MAX_SITES, WAN_NS_NAME_MAX - 1, MIN_DEFAULT_QUEUE_FRAMES,
        UNLIMITED_QUEUE >> 20, MIN_MTU, MAX_MTU);
}

/*
 * "D+[.D+]" at the start of `text`: all digits as one integer and how many
 * follow the point.  Returns where the number ends, or NULL.
 */
static const char *parse_decimal(const char *text, uint64_t *mantissa,
                                 unsigned *decimals)
{
    uint64_t m = 0;
    unsigned dec = 0;
    bool point = false;
    const char *p = text;
    if (!isdigit((unsigned char)*p))
        return NULL;
    for (;; p++) {
        if (isdigit((unsigned char)*p)) {
            unsigned digit = (unsigned)(*p - '0');
            if (m > (UINT64_MAX - digit) / 10)
                return NULL;
            m = m * 10 + digit;
            dec += point;
        } else if (*p == '.' && !point && isdigit((unsigned char)p[1])) {
            point = true;
        } else {
            break;
        }
    }
    if (dec > 9)
        return NULL;
    *mantissa = m;
    *decimals = dec;
    return p;
}

static const uint64_t pow10[] = {
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
};

/* mantissa / 10^decimals * unit, exact for the units used here. */
static int scale(uint64_t mantissa, unsigned decimals, uint64_t unit,
                 uint64_t *out)
{
    if (mantissa > UINT64_MAX / unit)
        return -1;
    *out = mantissa * unit / pow10[decimals];
    return 0;
}

/* Bytes a link of `bps` carries in `ns`, to the microsecond: bps <= 1e11
 * and ns <= 2e10 keep the product in 64 bits. */
static uint64_t bytes_at_rate(uint64_t bps, uint64_t ns)
{
    return bps * (ns / 1000) / 8000000;
}

struct unit {
    const char *name;
    uint64_t factor;
};

static int parse_with_units(const char *text, const struct unit *units,
                            size_t count, uint64_t bare_factor, uint64_t *out)
{
    uint64_t mantissa;
    unsigned decimals;
    const char *end = parse_decimal(text, &mantissa, &decimals);
    if (end == NULL)
        return -1;
    uint64_t factor = 0;
    if (*end == '\0') {
        factor = bare_factor;
    } else {
        for (size_t i = 0; i < count; i++)
            if (strcasecmp(end, units[i].name) == 0)
                factor = units[i].factor;
    }
    if (factor == 0)
        return -1;
    return scale(mantissa, decimals, factor, out);
}

int wan_parse_time(const char *text, uint64_t bare_unit_ns, uint64_t *ns)
{
    static const struct unit units[] = {
        {"ns", 1},
        {"us", 1000},
        {"ms", 1000000},
        {"s", 1000000000},
    };
    return parse_with_units(text, units, sizeof units / sizeof units[0],
                            bare_unit_ns, ns);
}

int wan_parse_rate(const char *text, uint64_t *bps)
{
    static const struct unit units[] = {
        {"bit", 1},
        {"kbit", 1000},
        {"mbit", 1000000},
        {"gbit", 1000000000},
    };
    return parse_with_units(text, units, sizeof units / sizeof units[0], 0,
                            bps);
}

int wan_parse_percent(const char *text, double *probability)
{
    uint64_t mantissa;
    unsigned decimals;
    const char *end = parse_decimal(text, &mantissa, &decimals);
    if (end == NULL || (*end != '\0' && strcmp(end, "%") != 0))
        return -1;
    double percent = (double)mantissa / (double)pow10[decimals];
    if (percent > 100)
        return -1;
    *probability = percent / 100;
    return 0;
}

int wan_parse_subnet(const char *text, uint32_t *net, unsigned *prefix_len)
{
    char addr[INET_ADDRSTRLEN];
    const char *slash = strchr(text, '/');
    if (slash == NULL || (size_t)(slash - text) >= sizeof addr)
        return -1;
    memcpy(addr, text, (size_t)(slash - text));
    addr[slash - text] = '\0';
    struct in_addr in;
    if (inet_pton(AF_INET, addr, &in) != 1)
        return -1;
    uint64_t len;
    if (parse_with_units(slash + 1, NULL, 0, 1, &len) != 0 || len < 8 ||
        len > 30 || strchr(slash + 1, '.') != NULL)
        return -1;
    uint32_t host_mask = (1u << (32 - len)) - 1;
    uint32_t value = ntohl(in.s_addr);
    if ((value & host_mask) != 0)
        return -1;
    *net = value;
    *prefix_len = (unsigned)len;
    return 0;
}

uint32_t wan_site_addr(const struct wan_options *o, unsigned site)
{
    return o->subnet + site + 1;
}

void wan_format_time(uint64_t ns, char *out, size_t len)
{
    if (ns % 1000000 == 0)
        snprintf(out, len, "%" PRIu64 "ms", ns / 1000000);
    else if (ns % 1000 == 0)
        snprintf(out, len, "%" PRIu64 "us", ns / 1000);
    else
        snprintf(out, len, "%" PRIu64 "ns", ns);
}

void wan_format_rate(uint64_t bps, char *out, size_t len)
{
    if (bps == 0)
        snprintf(out, len, "unlimited");
    else if (bps % 1000000 == 0)
        snprintf(out, len, "%" PRIu64 "Mbit", bps / 1000000);
    else if (bps % 1000 == 0)
        snprintf(out, len, "%" PRIu64 "kbit", bps / 1000);
    else
        snprintf(out, len, "%" PRIu64 "bit", bps);
}

/* ---- the command line ------------------------------------------------ */

enum {
    OPT_NS = 256,
    OPT_DELAY,
    OPT_JITTER,
    OPT_RATE,
    OPT_LOSS,
    OPT_QUEUE,
    OPT_QUEUE_MS,
    OPT_MTU,
    OPT_SUBNET,
    OPT_SEED,
    OPT_DURATION,
    OPT_RT_PRIORITY,
    OPT_HELP,
};

static const struct option long_options[] = {
    {"ns", required_argument, NULL, OPT_NS},
    {"delay", required_argument, NULL, OPT_DELAY},
    {"jitter", required_argument, NULL, OPT_JITTER},
    {"rate", required_argument, NULL, OPT_RATE},
    {"loss", required_argument, NULL, OPT_LOSS},
    {"queue", required_argument, NULL, OPT_QUEUE},
    {"queue-ms", required_argument, NULL, OPT_QUEUE_MS},
    {"mtu", required_argument, NULL, OPT_MTU},
    {"subnet", required_argument, NULL, OPT_SUBNET},
    {"seed", required_argument, NULL, OPT_SEED},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"rt-priority", required_argument, NULL, OPT_RT_PRIORITY},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

__attribute__((format(printf, 3, 4))) static enum wan_options_result
fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return WAN_OPTIONS_ERROR;
}

static bool valid_ns_name(const char *name, size_t len)
{
    if (len == 0 || len >= WAN_NS_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && strchr("_-.", name[i]) == NULL)
            return false;
    return true;
}

static enum wan_options_result parse_ns(const char *text, struct wan_options *o,
                                        char *err, size_t err_len)
{
    o->site_count = 0;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (!valid_ns_name(p, len))
            return fail(err, err_len,
                        "--ns: bad namespace name '%.*s' (1..%d of letters, "
                        "digits, '_', '-', '.', not starting with '.')",
                        (int)len, p, WAN_NS_NAME_MAX - 1);
        if (o->site_count == WAN_MAX_SITES)
            return fail(err, err_len, "--ns: more than %d namespaces",
                        WAN_MAX_SITES);
        memcpy(o->ns[o->site_count], p, len);
        o->ns[o->site_count][len] = '\0';
        for (unsigned i = 0; i < o->site_count; i++)
            if (strcmp(o->ns[i], o->ns[o->site_count]) == 0)
                return fail(err, err_len, "--ns: '%s' is given twice",
                            o->ns[i]);
        o->site_count++;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    if (o->site_count < 2)
        return fail(err, err_len, "--ns: needs at least two namespaces");
    return WAN_OPTIONS_RUN;
}

static const char *option_name(int val)
{
    for (const struct option *opt = long_options; opt->name != NULL; opt++)
        if (opt->val == val)
            return opt->name;
    return "?";
}

/* Cross-option checks and defaults, once every option is known. */
static enum wan_options_result finish(struct wan_options *o, bool queue_set,
                                      uint64_t queue_ns, bool queue_ms_set,
                                      char *err, size_t err_len)
{
    if (o->site_count == 0)
        return fail(err, err_len, "--ns: missing (which namespaces to join)");
    if (o->jitter_ns > o->delay_ns)
        return fail(err, err_len, "--jitter: larger than --delay");
    if (queue_set && queue_ms_set)
        return fail(err, err_len,
                    "--queue-ms: cannot be combined with --queue");
    if (queue_ms_set && o->rate_bps == 0)
        return fail(err, err_len, "--queue-ms: needs --rate");
    uint64_t frame = o->mtu + WAN_ETH_HLEN;
    if (queue_ms_set) {
        o->queue_bytes = bytes_at_rate(o->rate_bps, queue_ns);
        if (o->queue_bytes < frame || o->queue_bytes > MAX_QUEUE)
            return fail(err, err_len,
                        "--queue-ms: gives %" PRIu64 " bytes at --rate; "
                        "needs %" PRIu64 "..%llu",
                        o->queue_bytes, frame, MAX_QUEUE);
    } else if (queue_set) {
        if (o->queue_bytes < frame)
            return fail(err, err_len,
                        "--queue: %" PRIu64 " bytes do not hold one frame "
                        "(%" PRIu64 " bytes at --mtu %u)",
                        o->queue_bytes, frame, o->mtu);
    } else if (o->rate_bps != 0) {
        uint64_t bdp = bytes_at_rate(o->rate_bps, 2 * o->delay_ns);
        uint64_t floor = MIN_DEFAULT_QUEUE_FRAMES * frame;
        o->queue_bytes = bdp > floor ? bdp : floor;
        if (o->queue_bytes > MAX_QUEUE)
            o->queue_bytes = MAX_QUEUE;
    } else {
        o->queue_bytes = UNLIMITED_QUEUE;
    }
    uint64_t hosts = (1ull << (32 - o->prefix_len)) - 2;
    if (o->site_count > hosts)
        return fail(err, err_len,
                    "--subnet: /%u has %" PRIu64 " addresses for %u sites",
                    o->prefix_len, hosts, o->site_count);
    return WAN_OPTIONS_RUN;
}

enum wan_options_result wan_options_parse(int argc, char **argv,
                                          struct wan_options *o, char *err,
                                          size_t err_len)
{
    memset(o, 0, sizeof *o);
    o->mtu = 1500;
    o->seed = 1;
    wan_parse_subnet("10.77.0.0/24", &o->subnet, &o->prefix_len);
    bool queue_set = false;
    bool queue_ms_set = false;
    uint64_t queue_ns = 0;

    optind = 0; /* glibc: start afresh, also on a second call */
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        const char *arg = optarg;
        uint64_t value;
        switch (opt) {
        case OPT_NS:
            if (parse_ns(arg, o, err, err_len) != WAN_OPTIONS_RUN)
                return WAN_OPTIONS_ERROR;
            break;
        case OPT_DELAY:
        case OPT_JITTER:
            if (wan_parse_time(arg, 0, &value) != 0 || value > MAX_DELAY_NS)
                return fail(err, err_len,
                            "--%s: bad time '%s' (want 0..10s with a unit: "
                            "us, ms or s, e.g. 20ms)",
                            option_name(opt), arg);
            if (opt == OPT_DELAY)
                o->delay_ns = value;
            else
                o->jitter_ns = value;
            break;
        case OPT_RATE:
            if (wan_parse_rate(arg, &o->rate_bps) != 0 ||
                o->rate_bps < MIN_RATE_BPS || o->rate_bps > MAX_RATE_BPS)
                return fail(err, err_len,
                            "--rate: bad rate '%s' (want 1kbit..100gbit with "
                            "a unit: bit, kbit, mbit or gbit, e.g. 1gbit)",
                            arg);
            break;
        case OPT_LOSS:
            if (wan_parse_percent(arg, &o->loss) != 0)
                return fail(err, err_len,
                            "--loss: bad percentage '%s' (want 0..100, e.g. "
                            "0.1%%)",
                            arg);
            break;
        case OPT_QUEUE:
            if (gc_parse_size(arg, &o->queue_bytes) != 0 ||
                o->queue_bytes > MAX_QUEUE)
                return fail(err, err_len,
                            "--queue: bad size '%s' (want bytes up to 1G, "
                            "K/M/G suffixes)",
                            arg);
            queue_set = true;
            break;
        case OPT_QUEUE_MS:
            if (wan_parse_time(arg, 1000000, &queue_ns) != 0 ||
                queue_ns > MAX_DELAY_NS)
                return fail(err, err_len,
                            "--queue-ms: bad time '%s' (want milliseconds "
                            "up to 10000, or a time with a unit)",
                            arg);
            queue_ms_set = true;
            break;
        case OPT_MTU:
            if (parse_with_units(arg, NULL, 0, 1, &value) != 0 ||
                strchr(arg, '.') != NULL || value < MIN_MTU || value > MAX_MTU)
                return fail(err, err_len, "--mtu: bad MTU '%s' (want %u..%u)",
                            arg, MIN_MTU, MAX_MTU);
            o->mtu = (uint32_t)value;
            break;
        case OPT_SUBNET:
            if (wan_parse_subnet(arg, &o->subnet, &o->prefix_len) != 0)
                return fail(err, err_len,
                            "--subnet: bad subnet '%s' (want A.B.C.D/L with "
                            "L in 8..30 and no host bits set)",
                            arg);
            break;
        case OPT_SEED:
            if (parse_with_units(arg, NULL, 0, 1, &o->seed) != 0 ||
                strchr(arg, '.') != NULL)
                return fail(err, err_len,
                            "--seed: bad seed '%s' (want an unsigned 64-bit "
                            "integer)",
                            arg);
            break;
        case OPT_DURATION:
            if (wan_parse_time(arg, 1000000000, &o->duration_ns) != 0 ||
                o->duration_ns == 0)
                return fail(err, err_len,
                            "--duration: bad time '%s' (want seconds > 0, or "
                            "a time with a unit)",
                            arg);
            break;
        case OPT_RT_PRIORITY:
            if (parse_with_units(arg, NULL, 0, 1, &value) != 0 ||
                strchr(arg, '.') != NULL || value < 1 || value > 99)
                return fail(err, err_len,
                            "--rt-priority: bad priority '%s' (want 1..99)",
                            arg);
            o->rt_priority = (unsigned)value;
            break;
        case 'h':
        case OPT_HELP: return WAN_OPTIONS_HELP;
        case ':':
            return fail(err, err_len, "--%s: needs a value",
                        option_name(optopt));
        default:
            return fail(err, err_len, "unknown option '%s' (see --help)",
                        argv[optind - 1]);
        }
    }
    if (optind != argc)
        return fail(err, err_len, "unexpected argument '%s' (see --help)",
                    argv[optind]);
    return finish(o, queue_set, queue_ns, queue_ms_set, err, err_len);
}
