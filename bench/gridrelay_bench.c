/*
 * gridrelay-bench: end-to-end throughput and latency through two relays.
 *
 * By default it builds a throwaway two-site grid in a temporary directory
 * (job token, TLS CA and site certificates made with the openssl CLI, one
 * gridrelay per site), then moves data from rank A at site "a" to rank B
 * at site "b".  With --relay-a/--relay-b it uses relays started elsewhere.
 *
 * Rank B runs in a forked child so that sending, receiving and both relays
 * can use separate cores; the child reports back through a pipe.  Both
 * processes read CLOCK_MONOTONIC, which is shared machine-wide, so the
 * child's "last byte received" time can be compared with the parent's
 * "first send" time directly.
 */
#include "gc_proto.h"
#include "gc_relay_client.h"
#include "gc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG "gridrelay-bench"

#define DEFAULT_BYTES      (1ull << 30)
#define DEFAULT_MSG_SIZE   (4ull << 20)
#define DEFAULT_LAT_SIZE   8u
#define DEFAULT_STREAMS    4u
#define DEFAULT_CHUNK      (256u << 10)
#define DEFAULT_JOB_ID     7u
#define DEFAULT_ROUNDS     1000u
#define MAX_STREAMS        1024u
#define MAX_BENCH_MSG_SIZE (1ull << 30) /* buffers are really allocated */

/* Sender keeps about this many bytes of messages queued. */
#define SEND_WINDOW_BYTES (64u << 20)
#define SEND_WINDOW_MAX   64u

#define READY_TIMEOUT_MS   10000 /* relays accepting on their sockets */
#define CONNECT_RETRY_MS   10000 /* session handshake, with retries */
#define WARMUP_TIMEOUT_MS  30000 /* first message through the WAN link */
#define STALL_TIMEOUT_MS   120000
#define RELAY_TERM_WAIT_MS 3000

#define TAG_DATA 1 /* throughput message, verified by the receiver */
#define TAG_ECHO 2 /* warm-up and latency: the receiver sends it back */
#define CONTEXT  0

/* Seeds of echo messages, kept apart from data message indexes. */
#define ECHO_SEED(k) ((1ull << 63) | (uint64_t)(k))

struct options {
    uint64_t bytes;
    uint64_t msg_size;
    int msg_size_set;
    uint32_t streams;
    uint64_t chunk;
    int plaintext;
    int tuning_set; /* --streams/--chunk/--plaintext given */
    const char *relay_a;
    const char *relay_b;
    const char *token_file;
    uint32_t rank_a;
    uint32_t rank_b;
    uint32_t job_id;
    int csv;
    int latency;
    uint32_t rounds;
};

/* ---- small helpers ---------------------------------------------------- */

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    g_stop = sig;
}

static void die_usage(const char *fmt, ...)
    __attribute__((format(printf, 1, 2))) __attribute__((noreturn));

static void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '" PROG " --help'.\n");
    exit(2);
}

static void errorf(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void errorf(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static uint64_t ms_to_ns(uint64_t ms)
{
    return ms * 1000000ull;
}

static void sleep_ms(int ms)
{
    poll(NULL, 0, ms);
}

/* ---- data pattern ----------------------------------------------------- */

/*
 * Word w of a message with seed s is mix(base(s) + w * K).  Every 8-byte
 * word differs from every other position and from every other message, so
 * a misplaced, repeated or swapped chunk is caught, and consecutive words
 * cost an add and a few shifts: fill and check run at memory speed.
 */
#define PATTERN_STEP 0x9e3779b97f4a7c15ull

static uint64_t pattern_base(uint64_t seed)
{
    uint64_t x = seed + 0x632be59bd9b4e019ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t pattern_mix(uint64_t v)
{
    return v ^ (v >> 29) ^ (v << 17);
}

static void pattern_fill(uint8_t *buf, uint64_t len, uint64_t seed)
{
    uint64_t v = pattern_base(seed);
    uint64_t words = len / 8;
    for (uint64_t w = 0; w < words; w++, v += PATTERN_STEP) {
        uint64_t x = pattern_mix(v);
        memcpy(buf + 8 * w, &x, 8);
    }
    uint64_t x = pattern_mix(v);
    memcpy(buf + 8 * words, &x, len % 8);
}

/* Offset of the first wrong byte, or len when all match. */
static uint64_t pattern_check(const uint8_t *buf, uint64_t len, uint64_t seed)
{
    enum { BLOCK_WORDS = 512 };
    uint64_t v = pattern_base(seed);
    uint64_t words = len / 8;
    uint64_t w = 0;
    while (w < words) {
        /* OR the differences of a block so the loop vectorises; find the
         * exact byte only when a block is wrong. */
        uint64_t n = words - w < BLOCK_WORDS ? words - w : BLOCK_WORDS;
        uint64_t diff = 0;
        uint64_t bv = v;
        for (uint64_t i = 0; i < n; i++, bv += PATTERN_STEP) {
            uint64_t got;
            memcpy(&got, buf + 8 * (w + i), 8);
            diff |= got ^ pattern_mix(bv);
        }
        if (diff != 0) {
            for (uint64_t i = 0; i < n; i++, v += PATTERN_STEP) {
                uint64_t want = pattern_mix(v);
                for (int b = 0; b < 8; b++)
                    if (buf[8 * (w + i) + b] != ((const uint8_t *)&want)[b])
                        return 8 * (w + i) + (uint64_t)b;
            }
        }
        v = bv;
        w += n;
    }
    uint64_t want = pattern_mix(v);
    for (uint64_t b = 0; b < len % 8; b++)
        if (buf[8 * words + b] != ((const uint8_t *)&want)[b])
            return 8 * words + b;
    return len;
}

/* ---- option parsing --------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage: " PROG " [options]\n"
        "\n"
        "Measure GridColl relay throughput (default) or latency end to end:\n"
        "rank A at site a sends to rank B at site b through two gridrelay\n"
        "daemons.  Unless --relay-a/--relay-b are given, the bench starts\n"
        "both relays itself (the gridrelay binary next to this one) with\n"
        "temporary configuration, token and TLS certificates, and removes\n"
        "them at exit.\n"
        "\n"
        "Workload:\n"
        "  --bytes N        total bytes to move (default 1G)\n"
        "  --msg-size S     message size (default 4M; 8 with --latency)\n"
        "  --latency        measure round trips A->B->A of one message\n"
        "                   instead of throughput\n"
        "  --rounds N       round trips in --latency mode (default %u)\n"
        "\n"
        "Relays started by the bench:\n"
        "  --streams K      parallel TCP streams per link (default %u)\n"
        "  --chunk S        relay chunk size (default 256K)\n"
        "  --plaintext      no TLS on the link between the relays\n"
        "\n"
        "Relays started elsewhere (all three needed):\n"
        "  --relay-a EP     endpoint of site a's relay (unix:/path, /path or\n"
        "                   host:port)\n"
        "  --relay-b EP     endpoint of site b's relay\n"
        "  --token FILE     the job token file\n"
        "  --rank-a R       sending rank (default 0)\n"
        "  --rank-b R       receiving rank (default 1)\n"
        "  --job-id J       job id (default %u)\n"
        "\n"
        "Output:\n"
        "  --csv            print a CSV header and one row instead of the\n"
        "                   key=value line\n"
        "  --help           this text\n"
        "\n"
        "Sizes take K, M or G suffixes (powers of 1024).  The throughput\n"
        "line ends in 'MBps=<MB/s, 10^6 bytes> verified=yes|no'; MB/s counts\n"
        "from the first send to the last byte received, after a warm-up\n"
        "round trip has brought the link up.  Every byte is checked; any\n"
        "mismatch prints verified=no and exits 1.  With external relays,\n"
        "streams is printed as 0 and tls as 'external' (unknown here), and\n"
        "chunk is the size the relay announced.  Exit status: 0 success,\n"
        "1 failure or mismatch, 2 bad usage.\n",
        DEFAULT_ROUNDS, DEFAULT_STREAMS, DEFAULT_JOB_ID);
}

static uint64_t parse_size_arg(const char *flag, const char *text)
{
    uint64_t v;
    if (gc_parse_size(text, &v) != 0)
        die_usage("%s: '%s' is not a size (a number with optional K, M or G)",
                  flag, text);
    return v;
}

static uint32_t parse_u32_arg(const char *flag, const char *text, uint32_t min,
                              uint32_t max)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0)
        die_usage("%s: '%s' is not a number", flag, text);
    if (v < min || v > max)
        die_usage("%s: %llu is out of range (%u..%u)", flag, v, min, max);
    return (uint32_t)v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
    enum {
        OPT_BYTES = 256,
        OPT_MSG_SIZE,
        OPT_STREAMS,
        OPT_CHUNK,
        OPT_PLAINTEXT,
        OPT_RELAY_A,
        OPT_RELAY_B,
        OPT_TOKEN,
        OPT_RANK_A,
        OPT_RANK_B,
        OPT_JOB_ID,
        OPT_CSV,
        OPT_LATENCY,
        OPT_ROUNDS,
        OPT_HELP,
    };
    static const struct option longopts[] = {
        {"bytes", required_argument, NULL, OPT_BYTES},
        {"msg-size", required_argument, NULL, OPT_MSG_SIZE},
        {"streams", required_argument, NULL, OPT_STREAMS},
        {"chunk", required_argument, NULL, OPT_CHUNK},
        {"plaintext", no_argument, NULL, OPT_PLAINTEXT},
        {"relay-a", required_argument, NULL, OPT_RELAY_A},
        {"relay-b", required_argument, NULL, OPT_RELAY_B},
        {"token", required_argument, NULL, OPT_TOKEN},
        {"rank-a", required_argument, NULL, OPT_RANK_A},
        {"rank-b", required_argument, NULL, OPT_RANK_B},
        {"job-id", required_argument, NULL, OPT_JOB_ID},
        {"csv", no_argument, NULL, OPT_CSV},
        {"latency", no_argument, NULL, OPT_LATENCY},
        {"rounds", required_argument, NULL, OPT_ROUNDS},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    *o = (struct options){
        .bytes = DEFAULT_BYTES,
        .msg_size = DEFAULT_MSG_SIZE,
        .streams = DEFAULT_STREAMS,
        .chunk = DEFAULT_CHUNK,
        .rank_a = 0,
        .rank_b = 1,
        .job_id = DEFAULT_JOB_ID,
        .rounds = DEFAULT_ROUNDS,
    };
    int bytes_set = 0;
    int rank_set = 0;
    opterr = 0; /* our own messages, with the --help hint */
    for (;;) {
        int c = getopt_long(argc, argv, ":", longopts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case OPT_BYTES:
            o->bytes = parse_size_arg("--bytes", optarg);
            bytes_set = 1;
            break;
        case OPT_MSG_SIZE:
            o->msg_size = parse_size_arg("--msg-size", optarg);
            o->msg_size_set = 1;
            break;
        case OPT_STREAMS:
            o->streams = parse_u32_arg("--streams", optarg, 1, MAX_STREAMS);
            o->tuning_set = 1;
            break;
        case OPT_CHUNK:
            o->chunk = parse_size_arg("--chunk", optarg);
            o->tuning_set = 1;
            break;
        case OPT_PLAINTEXT:
            o->plaintext = 1;
            o->tuning_set = 1;
            break;
        case OPT_RELAY_A: o->relay_a = optarg; break;
        case OPT_RELAY_B: o->relay_b = optarg; break;
        case OPT_TOKEN: o->token_file = optarg; break;
        case OPT_RANK_A:
            o->rank_a = parse_u32_arg("--rank-a", optarg, 0, GC_MAX_RANK);
            rank_set = 1;
            break;
        case OPT_RANK_B:
            o->rank_b = parse_u32_arg("--rank-b", optarg, 0, GC_MAX_RANK);
            rank_set = 1;
            break;
        case OPT_JOB_ID:
            o->job_id = parse_u32_arg("--job-id", optarg, 0, UINT32_MAX);
            break;
        case OPT_CSV: o->csv = 1; break;
        case OPT_LATENCY: o->latency = 1; break;
        case OPT_ROUNDS:
            o->rounds = parse_u32_arg("--rounds", optarg, 1, 10000000);
            break;
        case OPT_HELP: usage(stdout); exit(0);
        case ':': die_usage("option '%s' needs a value", argv[optind - 1]);
        default: die_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die_usage("unexpected argument '%s'", argv[optind]);

    int external = o->relay_a != NULL || o->relay_b != NULL;
    if (external && (o->relay_a == NULL || o->relay_b == NULL))
        die_usage("--relay-a and --relay-b go together");
    if (external && o->token_file == NULL)
        die_usage("--relay-a/--relay-b need --token FILE (the job token)");
    if (!external && o->token_file != NULL)
        die_usage("--token only applies to relays started elsewhere "
                  "(--relay-a/--relay-b); the bench makes its own token");
    if (external && o->tuning_set)
        die_usage("--streams, --chunk and --plaintext configure the relays "
                  "the bench starts; they do not apply with --relay-a/-b");
    if (!external && rank_set)
        die_usage("--rank-a/--rank-b only apply with --relay-a/--relay-b");
    if (o->rank_a == o->rank_b)
        die_usage("--rank-a and --rank-b must differ");
    if (o->chunk == 0 || o->chunk > GC_MAX_PAYLOAD)
        die_usage("--chunk must be between 1 and %u bytes", GC_MAX_PAYLOAD);
    if (o->latency) {
        if (bytes_set)
            die_usage("--bytes does not apply to --latency (use --rounds)");
        if (!o->msg_size_set)
            o->msg_size = DEFAULT_LAT_SIZE;
    } else {
        if (o->bytes == 0)
            die_usage("--bytes must be at least 1");
        if (o->msg_size == 0)
            die_usage("--msg-size must be at least 1 in throughput mode");
    }
    if (o->msg_size > MAX_BENCH_MSG_SIZE)
        die_usage("--msg-size is limited to 1G here");
}

/* ---- managed relays --------------------------------------------------- */

struct relay {
    const char *site; /* "a" or "b" */
    pid_t pid;
    uint16_t wan_port;
    char conf[PATH_MAX];
    char sock[108]; /* sizeof sun_path */
    char log[PATH_MAX];
};

struct env {
    int managed;
    char dir[PATH_MAX]; /* "" until created */
    char relay_bin[PATH_MAX];
    char token_path[PATH_MAX];
    struct relay relay[2];
    char endpoint_a[PATH_MAX + 8];
    char endpoint_b[PATH_MAX + 8];
    uint8_t token[GC_TOKEN_MAX];
    size_t token_len;
};

static int path_join(char *out, size_t out_len, const char *dir,
                     const char *name)
{
    int n = snprintf(out, out_len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= out_len ? -1 : 0;
}

static int write_file(const char *path, const char *text, mode_t mode,
                      char *err, size_t err_len)
{
    int status = -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        errorf(err, err_len, "cannot create %s: %s", path, strerror(errno));
        goto cleanup;
    }
    size_t len = strlen(text);
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            errorf(err, err_len, "cannot write %s: %s", path, strerror(errno));
            goto cleanup;
        }
        done += (size_t)n;
    }
    status = 0;
cleanup:
    if (fd >= 0 && close(fd) != 0 && status == 0) {
        errorf(err, err_len, "cannot write %s: %s", path, strerror(errno));
        status = -1;
    }
    return status;
}

/* The gridrelay binary installed next to this executable. */
static int find_relay_binary(char *out, size_t out_len, char *err,
                             size_t err_len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) {
        errorf(err, err_len, "cannot read /proc/self/exe: %s", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) {
        errorf(err, err_len, "odd executable path '%s'", self);
        return -1;
    }
    *slash = '\0';
    if (path_join(out, out_len, self, "gridrelay") != 0) {
        errorf(err, err_len, "path too long");
        return -1;
    }
    if (access(out, X_OK) != 0) {
        errorf(err, err_len,
               "no gridrelay executable at %s (%s); build it or use "
               "--relay-a/--relay-b with relays started elsewhere",
               out, strerror(errno));
        return -1;
    }
    return 0;
}

/*
 * Run a command with stdin from /dev/null and output appended to `log`;
 * 0 when it exits with status 0.
 */
static int run_command(char *const argv[], const char *cwd, const char *log,
                       char *err, size_t err_len)
{
    pid_t pid = fork();
    if (pid < 0) {
        errorf(err, err_len, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(out, 2) < 0 || (cwd != NULL && chdir(cwd) != 0))
            _exit(127);
        execvp(argv[0], argv);
        _exit(127);
    }
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0) {
        if (errno != EINTR) {
            errorf(err, err_len, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        errorf(err, err_len, "'%s %s' failed (exit %d); see %s", argv[0],
               argv[1], WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, log);
        return -1;
    }
    return 0;
}

/* Temporary CA and one EC P-256 key + certificate per site, signed by it. */
static int make_certificates(const struct env *env, char *err, size_t err_len)
{
    char log[PATH_MAX];
    if (path_join(log, sizeof log, env->dir, "openssl.log") != 0) {
        errorf(err, err_len, "path too long");
        return -1;
    }
    char *ca[] = {"openssl",
                  "req",
                  "-x509",
                  "-new",
                  "-newkey",
                  "ec",
                  "-pkeyopt",
                  "ec_paramgen_curve:P-256",
                  "-nodes",
                  "-keyout",
                  "ca.key",
                  "-out",
                  "ca.crt",
                  "-days",
                  "2",
                  "-subj",
                  "/CN=gridrelay-bench CA",
                  "-addext",
                  "basicConstraints=critical,CA:TRUE",
                  "-addext",
                  "keyUsage=critical,keyCertSign,cRLSign",
                  NULL};
    if (run_command(ca, env->dir, log, err, err_len) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        const char *site = env->relay[i].site;
        char key[32], csr[32], crt[32], ext[32], subj[32], extpath[PATH_MAX];
        char ext_text[256];
        snprintf(key, sizeof key, "%s.key", site);
        snprintf(csr, sizeof csr, "%s.csr", site);
        snprintf(crt, sizeof crt, "%s.crt", site);
        snprintf(ext, sizeof ext, "%s.ext", site);
        snprintf(subj, sizeof subj, "/CN=%s", site);
        /* Both server and client use: the dialling relay presents its
         * certificate too.  The SAN covers the site name and loopback. */
        snprintf(ext_text, sizeof ext_text,
                 "basicConstraints=critical,CA:FALSE\n"
                 "keyUsage=critical,digitalSignature\n"
                 "extendedKeyUsage=serverAuth,clientAuth\n"
                 "subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1\n",
                 site);
        if (path_join(extpath, sizeof extpath, env->dir, ext) != 0 ||
            write_file(extpath, ext_text, 0600, err, err_len) != 0)
            return -1;
        char *req[] = {"openssl",
                       "req",
                       "-new",
                       "-newkey",
                       "ec",
                       "-pkeyopt",
                       "ec_paramgen_curve:P-256",
                       "-nodes",
                       "-keyout",
                       key,
                       "-out",
                       csr,
                       "-subj",
                       subj,
                       NULL};
        char *sign[] = {
            "openssl", "x509",   "-req",   "-in",    csr,
            "-CA",     "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out",    crt,      "-days",  "2",      "-extfile",
            ext,       NULL};
        if (run_command(req, env->dir, log, err, err_len) != 0 ||
            run_command(sign, env->dir, log, err, err_len) != 0)
            return -1;
    }
    return 0;
}

/* A port free right now on 127.0.0.1 (the relay binds it moments later). */
static int pick_ports(uint16_t *ports, int count, char *err, size_t err_len)
{
    int status = -1;
    int fds[2] = {-1, -1};
    /* Both sockets stay bound until both ports are known, so the two
     * relays get different ports. */
    for (int i = 0; i < count; i++) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof sin;
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 ||
            bind(fds[i], (struct sockaddr *)&sin, sizeof sin) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&sin, &len) != 0) {
            errorf(err, err_len, "cannot find a free TCP port: %s",
                   strerror(errno));
            goto cleanup;
        }
        ports[i] = ntohs(sin.sin_port);
    }
    status = 0;
cleanup:
    for (int i = 0; i < count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return status;
}

static int write_relay_config(const struct env *env, const struct options *o,
                              int i, char *err, size_t err_len)
{
    const struct relay *me = &env->relay[i];
    const struct relay *peer = &env->relay[1 - i];
    uint32_t my_rank = i == 0 ? o->rank_a : o->rank_b;
    uint32_t peer_rank = i == 0 ? o->rank_b : o->rank_a;
    /* Plaintext links need no certificates: leave the group out. */
    char tls[3 * PATH_MAX + 64] = "";
    if (!o->plaintext)
        snprintf(tls, sizeof tls,
                 "tls = { cert = \"%s/%s.crt\"; key = \"%s/%s.key\"; "
                 "ca = \"%s/ca.crt\"; };",
                 env->dir, me->site, env->dir, me->site, env->dir);
    char text[8 * PATH_MAX];
    int n = snprintf(text, sizeof text,
                     "# Written by " PROG "; removed when it exits.\n"
                     "site = \"%s\"; job_id = %u; first_rank = %u; "
                     "rank_count = 1;\n"
                     "token_file = \"%s\";\n"
                     "local = { unix = \"%s\"; tcp = \"\"; };\n"
                     "wan = { listen = \"127.0.0.1:%u\"; streams = %u; "
                     "chunk_size = %" PRIu64 "; plaintext = %s; };\n"
                     "%s\n"
                     "http = { listen = \"\"; };\n"
                     "log = { level = \"warn\"; };\n"
                     "peers = ( { name = \"%s\"; first_rank = %u; "
                     "rank_count = 1; address = \"127.0.0.1:%u\"; "
                     "connect = \"auto\"; } );\n",
                     me->site, o->job_id, my_rank, env->token_path, me->sock,
                     me->wan_port, o->streams, o->chunk,
                     o->plaintext ? "true" : "false", tls, peer->site,
                     peer_rank, peer->wan_port);
    if (n < 0 || (size_t)n >= sizeof text) {
        errorf(err, err_len, "relay configuration too long");
        return -1;
    }
    return write_file(me->conf, text, 0600, err, err_len);
}

static int spawn_relay(const struct env *env, struct relay *r, char *err,
                       size_t err_len)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        errorf(err, err_len, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* A relay must not outlive a bench that was killed outright. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        int in = open("/dev/null", O_RDONLY);
        int out = open(r->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(out, 2) < 0)
            _exit(127);
        char *argv[] = {(char *)env->relay_bin, "-c", r->conf, NULL};
        execv(argv[0], argv);
        dprintf(2, PROG ": cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    r->pid = pid;
    return 0;
}

/* Reap `pid` if it has exited; 1 when it is gone. */
static int reaped(pid_t pid, int *wstatus)
{
    pid_t got = waitpid(pid, wstatus, WNOHANG);
    return got == pid || (got < 0 && errno == ECHILD);
}

/*
 * Give `pid` up to wait_ms to exit by itself, then SIGTERM and grace_ms,
 * then SIGKILL; always reaps it.
 */
static void stop_process(pid_t *pid, int wait_ms, int grace_ms)
{
    if (*pid <= 0)
        return;
    int wstatus;
    int termed = 0;
    uint64_t deadline = gc_now_ns() + ms_to_ns((uint64_t)wait_ms);
    while (!reaped(*pid, &wstatus)) {
        if (gc_now_ns() >= deadline) {
            if (termed) {
                kill(*pid, SIGKILL);
                while (waitpid(*pid, &wstatus, 0) < 0 && errno == EINTR)
                    ;
                break;
            }
            kill(*pid, SIGTERM);
            termed = 1;
            deadline = gc_now_ns() + ms_to_ns((uint64_t)grace_ms);
        }
        sleep_ms(5);
    }
    *pid = 0;
}

static void print_log_tail(const char *what, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char lines[20][512];
    int n = 0;
    while (fgets(lines[n % 20], sizeof lines[0], f) != NULL)
        n++;
    fclose(f);
    if (n == 0)
        return;
    fprintf(stderr, PROG ": last lines of %s (%s):\n", what, path);
    for (int i = n > 20 ? n - 20 : 0; i < n; i++)
        fprintf(stderr, "  %s", lines[i % 20]);
}

/* Wait until the relay accepts on its Unix socket, or dies trying. */
static int wait_relay_ready(struct relay *r, uint64_t deadline, char *err,
                            size_t err_len)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof sun.sun_path, "%s", r->sock);
    for (;;) {
        int wstatus = 0;
        if (reaped(r->pid, &wstatus)) {
            r->pid = 0;
            errorf(err, err_len, "relay %s exited during start-up (%s %d)",
                   r->site, WIFSIGNALED(wstatus) ? "signal" : "status",
                   WIFSIGNALED(wstatus) ? WTERMSIG(wstatus)
                                        : WEXITSTATUS(wstatus));
            return -1;
        }
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            errorf(err, err_len, "socket: %s", strerror(errno));
            return -1;
        }
        int ok = connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0;
        close(fd);
        if (ok)
            return 0;
        if (g_stop || gc_now_ns() >= deadline) {
            errorf(err, err_len, "relay %s does not accept on %s after %d s",
                   r->site, r->sock, READY_TIMEOUT_MS / 1000);
            return -1;
        }
        sleep_ms(20);
    }
}

static int random_hex_token(char *out, size_t out_len)
{
    uint8_t raw[32];
    if (out_len < 2 * sizeof raw + 2 || gc_random_bytes(raw, sizeof raw) != 0)
        return -1;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    strcat(out, "\n");
    return 0;
}

static int setup_managed(struct env *env, const struct options *o, char *err,
                         size_t err_len)
{
    if (find_relay_binary(env->relay_bin, sizeof env->relay_bin, err,
                          err_len) != 0)
        return -1;
    const char *tmp = getenv("TMPDIR");
    /* Unix socket paths are short (108 bytes); a deep TMPDIR would not
     * fit, /tmp always does. */
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 40)
        tmp = "/tmp";
    snprintf(env->dir, sizeof env->dir, "%s/gridrelay-bench.XXXXXX", tmp);
    if (mkdtemp(env->dir) == NULL) {
        errorf(err, err_len, "cannot create a temporary directory in %s: %s",
               tmp, strerror(errno));
        env->dir[0] = '\0';
        return -1;
    }

    char token_text[80];
    if (path_join(env->token_path, sizeof env->token_path, env->dir, "token") !=
            0 ||
        random_hex_token(token_text, sizeof token_text) != 0 ||
        write_file(env->token_path, token_text, 0600, err, err_len) != 0) {
        if (err[0] == '\0')
            errorf(err, err_len, "cannot make a job token");
        return -1;
    }
    int n = gc_token_read_file(env->token_path, env->token, sizeof env->token,
                               err, err_len);
    if (n < 0)
        return -1;
    env->token_len = (size_t)n;

    uint16_t ports[2];
    if (pick_ports(ports, 2, err, err_len) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        struct relay *r = &env->relay[i];
        char name[32];
        r->wan_port = ports[i];
        snprintf(name, sizeof name, "%s.conf", r->site);
        int bad = path_join(r->conf, sizeof r->conf, env->dir, name);
        snprintf(name, sizeof name, "%s.sock", r->site);
        bad |= path_join(r->sock, sizeof r->sock, env->dir, name);
        snprintf(name, sizeof name, "%s.log", r->site);
        bad |= path_join(r->log, sizeof r->log, env->dir, name);
        if (bad) {
            errorf(err, err_len, "temporary directory path too long");
            return -1;
        }
    }
    if (!o->plaintext && make_certificates(env, err, err_len) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (write_relay_config(env, o, i, err, err_len) != 0)
            return -1;
    for (int i = 0; i < 2; i++)
        if (spawn_relay(env, &env->relay[i], err, err_len) != 0)
            return -1;
    uint64_t deadline = gc_now_ns() + ms_to_ns(READY_TIMEOUT_MS);
    for (int i = 0; i < 2; i++)
        if (wait_relay_ready(&env->relay[i], deadline, err, err_len) != 0)
            return -1;
    snprintf(env->endpoint_a, sizeof env->endpoint_a, "unix:%s",
             env->relay[0].sock);
    snprintf(env->endpoint_b, sizeof env->endpoint_b, "unix:%s",
             env->relay[1].sock);
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void teardown_env(struct env *env, int failed)
{
    for (int i = 0; i < 2; i++)
        stop_process(&env->relay[i].pid, 0, RELAY_TERM_WAIT_MS);
    if (env->dir[0] == '\0')
        return;
    for (int i = 0; failed && i < 2; i++) {
        char what[32];
        snprintf(what, sizeof what, "relay %s", env->relay[i].site);
        print_log_tail(what, env->relay[i].log);
    }
    nftw(env->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    env->dir[0] = '\0';
}

/* ---- sessions --------------------------------------------------------- */

/* What the receiver process tells the sender at the end, through a pipe. */
struct child_report {
    int32_t ok;       /* finished without a session failure */
    int32_t verified; /* every byte matched */
    uint64_t t_last_byte;
    uint64_t data_got;
    char err[640]; /* a peer's err with a prefix */
};
_Static_assert(sizeof(struct child_report) < PIPE_BUF,
               "the report must be written atomically");

struct echo {
    struct gc_rc_send *req;
    uint8_t *buf;
    int library_allocated;
};

#define ECHO_MAX 64

/* State shared by the callbacks of one session (sender or receiver). */
struct peer {
    const struct options *o;
    struct gc_rc *rc;
    int receiver;
    int watch_fd; /* sender: the receiver's report pipe, else -1 */
    struct child_report report; /* read early through watch_fd */
    int have_report;
    uint64_t last_activity; /* for stall detection */
    char err[512];
    int failed; /* a check failed or a send could not be queued */

    /* receive buffers for messages of up to buf_size bytes */
    uint64_t buf_size;
    uint8_t **pool;
    size_t pool_len;
    size_t pool_cap;

    /* receiver: data messages */
    uint64_t data_count; /* expected */
    uint64_t data_got;
    uint64_t seq_base; /* msg_seq of data message 0 */
    uint64_t t_last_byte;
    int mismatch;
    /* receiver: echoes being sent back */
    struct echo echoes[ECHO_MAX];
    size_t echo_len;
    uint64_t echoes_sent;

    /* sender: replies */
    uint64_t replies;
    uint64_t reply_len_expect;
    uint64_t reply_seed;
    int reply_bad;
};

static void *peer_alloc(void *arg, const struct gc_rc_msg_info *info)
{
    struct peer *p = arg;
    p->last_activity = gc_now_ns();
    if (info->msg_len > p->buf_size)
        return NULL; /* unexpected size: let the library allocate */
    if (p->pool_len > 0)
        return p->pool[--p->pool_len];
    return malloc(p->buf_size > 0 ? p->buf_size : 1);
}

static void peer_release(struct peer *p, uint8_t *buf, int library_allocated)
{
    if (!library_allocated && p->pool_len < p->pool_cap)
        p->pool[p->pool_len++] = buf;
    else
        free(buf);
}

static uint64_t data_len(const struct options *o, uint64_t idx)
{
    uint64_t off = idx * o->msg_size;
    return o->bytes - off < o->msg_size ? o->bytes - off : o->msg_size;
}

static void receiver_data(struct peer *p, const struct gc_rc_msg_info *info,
                          uint8_t *buf)
{
    uint64_t idx = p->data_got++;
    p->t_last_byte = gc_now_ns();
    if (p->mismatch)
        return; /* the first bad message is what gets reported */
    if (idx >= p->data_count) {
        p->mismatch = 1;
        errorf(p->err, sizeof p->err, "unexpected extra data message");
        return;
    }
    uint64_t want_len = data_len(p->o, idx);
    if (info->msg_seq != p->seq_base + idx || info->msg_len != want_len) {
        p->mismatch = 1;
        errorf(p->err, sizeof p->err,
               "message %" PRIu64 ": got msg_seq %" PRIu64 " length %" PRIu64
               ", expected msg_seq %" PRIu64 " length %" PRIu64,
               idx, info->msg_seq, info->msg_len, p->seq_base + idx, want_len);
        return;
    }
    uint64_t bad = pattern_check(buf, info->msg_len, idx);
    if (bad != info->msg_len) {
        p->mismatch = 1;
        errorf(p->err, sizeof p->err,
               "message %" PRIu64 " differs at byte %" PRIu64, idx, bad);
    }
}

static void receiver_echo(struct peer *p, const struct gc_rc_msg_info *info,
                          uint8_t *buf, int library_allocated)
{
    if (p->echo_len == ECHO_MAX) {
        p->failed = 1;
        errorf(p->err, sizeof p->err, "too many echoes in flight");
        peer_release(p, buf, library_allocated);
        return;
    }
    struct echo *e = &p->echoes[p->echo_len];
    /* Sending from the callback lets gc_rc_progress() write the reply in
     * the same call, which keeps a poll() round out of the latency. */
    if (gc_rc_isend(p->rc, info->src_rank, CONTEXT, TAG_ECHO, buf,
                    info->msg_len, &e->req) != 0) {
        p->failed = 1;
        errorf(p->err, sizeof p->err, "cannot send the echo: %s",
               gc_rc_error(p->rc));
        peer_release(p, buf, library_allocated);
        return;
    }
    e->buf = buf;
    e->library_allocated = library_allocated;
    p->echo_len++;
    p->echoes_sent++;
}

static void sender_reply(struct peer *p, const struct gc_rc_msg_info *info,
                         uint8_t *buf)
{
    p->replies++;
    if (info->msg_len != p->reply_len_expect ||
        pattern_check(buf, info->msg_len, p->reply_seed) != info->msg_len)
        p->reply_bad = 1;
}

static void peer_complete(void *arg, const struct gc_rc_msg_info *info,
                          void *buf, int library_allocated)
{
    struct peer *p = arg;
    p->last_activity = gc_now_ns();
    if (p->receiver && info->tag == TAG_DATA) {
        receiver_data(p, info, buf);
    } else if (p->receiver && info->tag == TAG_ECHO) {
        receiver_echo(p, info, buf, library_allocated);
        return; /* buffer travels with the echo */
    } else if (!p->receiver && info->tag == TAG_ECHO) {
        sender_reply(p, info, buf);
    } else {
        p->failed = 1;
        errorf(p->err, sizeof p->err,
               "unexpected message (tag %d, %" PRIu64 " bytes) from rank %u",
               info->tag, info->msg_len, info->src_rank);
    }
    peer_release(p, buf, library_allocated);
}

/* Free the buffers of echoes that are fully written. */
static void reap_echoes(struct peer *p)
{
    size_t kept = 0;
    for (size_t i = 0; i < p->echo_len; i++) {
        struct echo *e = &p->echoes[i];
        if (gc_rc_send_done(e->req)) {
            gc_rc_send_free(e->req);
            peer_release(p, e->buf, e->library_allocated);
        } else {
            p->echoes[kept++] = *e;
        }
    }
    p->echo_len = kept;
}

static int peer_init(struct peer *p, const struct options *o, int receiver)
{
    memset(p, 0, sizeof *p);
    p->o = o;
    p->receiver = receiver;
    p->buf_size = o->msg_size > 0 ? o->msg_size : 1;
    p->pool_cap = 8;
    p->pool = calloc(p->pool_cap, sizeof *p->pool);
    p->last_activity = gc_now_ns();
    p->watch_fd = -1;
    return p->pool != NULL ? 0 : -1;
}

static void peer_destroy(struct peer *p)
{
    for (size_t i = 0; i < p->echo_len; i++)
        gc_rc_send_free(p->echoes[i].req);
    if (p->rc != NULL)
        gc_rc_close(p->rc, 5000);
    p->rc = NULL;
    /* Echo buffers may be released only once the session is gone. */
    for (size_t i = 0; i < p->echo_len; i++)
        free(p->echoes[i].buf);
    p->echo_len = 0;
    for (size_t i = 0; i < p->pool_len; i++)
        free(p->pool[i]);
    free(p->pool);
    p->pool = NULL;
}

/* Connect, retrying while the relay is still coming up. */
static int peer_connect(struct peer *p, const char *endpoint,
                        const uint8_t *token, size_t token_len, uint32_t rank)
{
    struct gc_rc_options opt = {
        .endpoint = endpoint,
        .token = token,
        .token_len = token_len,
        .job_id = p->o->job_id,
        .rank = rank,
        .connect_timeout_ms = 5000,
        .on_alloc = peer_alloc,
        .on_complete = peer_complete,
        .cb_arg = p,
    };
    uint64_t deadline = gc_now_ns() + ms_to_ns(CONNECT_RETRY_MS);
    for (;;) {
        char why[512];
        if (gc_rc_connect(&opt, &p->rc, why, sizeof why) == 0)
            return 0;
        /* A relay still starting up is worth waiting for; a wrong token
         * will not get better. */
        int hopeless = strstr(why, "relay refused: auth") != NULL ||
                       strstr(why, "failed to prove") != NULL;
        if (hopeless || g_stop || gc_now_ns() >= deadline) {
            errorf(p->err, sizeof p->err, "rank %u cannot join relay %s: %s",
                   rank, endpoint, why);
            return -1;
        }
        sleep_ms(100);
    }
}

/*
 * Read the receiver's report once the pipe is readable.  It is written
 * with one write() of less than PIPE_BUF bytes, so it arrives whole.
 */
static int read_report_raw(int fd, struct child_report *rep)
{
    size_t got = 0;
    while (got < sizeof *rep) {
        ssize_t n = read(fd, (uint8_t *)rep + got, sizeof *rep - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* One progress step with the failure and stall checks every loop needs. */
static int peer_step(struct peer *p, int timeout_ms)
{
    if (g_stop) {
        errorf(p->err, sizeof p->err, "interrupted by signal %d", (int)g_stop);
        return -1;
    }
    if (p->watch_fd >= 0) {
        /* A receiver that failed reports at once: stop instead of sending
         * into a dead end until a timeout. */
        struct pollfd pfd[2] = {
            {.fd = gc_rc_fd(p->rc),
             .events =
                 (short)(POLLIN | (gc_rc_pending_bytes(p->rc) ? POLLOUT : 0))},
            {.fd = p->watch_fd, .events = POLLIN},
        };
        if (poll(pfd, 2, timeout_ms) > 0 && pfd[1].revents != 0) {
            /* A successful report is legitimate too: in latency mode the
             * receiver is done once the last echo is written, before we
             * have read it.  Keep it for the end. */
            p->watch_fd = -1;
            if (read_report_raw(pfd[1].fd, &p->report) != 0) {
                errorf(p->err, sizeof p->err,
                       "the receiver ended without reporting");
                return -1;
            }
            p->have_report = 1;
            if (!p->report.ok) {
                errorf(p->err, sizeof p->err, "the receiver stopped early");
                return -1;
            }
        }
        timeout_ms = 0;
    }
    int n = gc_rc_progress(p->rc, timeout_ms);
    if (n < 0) {
        errorf(p->err, sizeof p->err, "rank session failed: %s",
               gc_rc_error(p->rc));
        return -1;
    }
    if (n > 0)
        p->last_activity = gc_now_ns();
    if (p->failed)
        return -1;
    if (gc_now_ns() - p->last_activity > ms_to_ns(STALL_TIMEOUT_MS)) {
        errorf(p->err, sizeof p->err, "no progress for %d s; giving up",
               STALL_TIMEOUT_MS / 1000);
        return -1;
    }
    return 0;
}

/* ---- receiver (child process) ----------------------------------------- */

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int run_receiver(const struct options *o, const struct env *env,
                        const char *endpoint, int report_fd)
{
    struct peer p;
    struct child_report rep = {0};
    int status = 1;
    if (peer_init(&p, o, 1) != 0) {
        snprintf(rep.err, sizeof rep.err, "out of memory");
        goto cleanup;
    }
    if (peer_connect(&p, endpoint, env->token, env->token_len, o->rank_b) !=
        0) {
        snprintf(rep.err, sizeof rep.err, "%s", p.err);
        goto cleanup;
    }
    if (write_all(report_fd, "R", 1) != 0)
        goto cleanup;

    /* The sender's first message (msg_seq 0) is the warm-up echo. */
    p.seq_base = 1;
    p.data_count = o->latency ? 0 : (o->bytes + o->msg_size - 1) / o->msg_size;
    uint64_t echoes_due = o->latency ? 1 + (uint64_t)o->rounds : 1;
    while (p.data_got < p.data_count || p.echoes_sent < echoes_due ||
           p.echo_len > 0) {
        if (peer_step(&p, 1000) != 0) {
            snprintf(rep.err, sizeof rep.err, "receiver: %s", p.err);
            goto cleanup;
        }
        reap_echoes(&p);
    }
    rep.ok = 1;
    rep.verified = !p.mismatch;
    rep.t_last_byte = p.t_last_byte;
    rep.data_got = p.data_got;
    if (p.mismatch)
        snprintf(rep.err, sizeof rep.err, "receiver: %s", p.err);
    status = 0;
cleanup:
    /* Report before closing: the sender's clock is not waiting on our
     * goodbye. */
    write_all(report_fd, &rep, sizeof rep);
    peer_destroy(&p);
    return status;
}

static pid_t start_receiver(const struct options *o, const struct env *env,
                            const char *endpoint, int *report_fd, char *err,
                            size_t err_len)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        errorf(err, err_len, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        errorf(err, err_len, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(fds[0]);
        /* _exit: the parent's relays and files are not ours to clean. */
        _exit(run_receiver(o, env, endpoint, fds[1]));
    }
    close(fds[1]);
    *report_fd = fds[0];
    return pid;
}

/* Read exactly `len` bytes from the receiver, progressing our own session
 * meanwhile (it may have PINGs to answer). */
static int read_report(struct peer *p, int fd, void *buf, size_t len,
                       int timeout_ms)
{
    size_t got = 0;
    uint64_t deadline = timeout_ms < 0
                            ? UINT64_MAX
                            : gc_now_ns() + ms_to_ns((uint64_t)timeout_ms);
    while (got < len) {
        if (g_stop) {
            errorf(p->err, sizeof p->err, "interrupted by signal %d",
                   (int)g_stop);
            return -1;
        }
        if (gc_now_ns() >= deadline) {
            errorf(p->err, sizeof p->err, "the receiver did not report back");
            return -1;
        }
        struct pollfd pfd[2] = {
            {.fd = fd, .events = POLLIN},
            {.fd = p->rc != NULL ? gc_rc_fd(p->rc) : -1, .events = POLLIN}};
        if (poll(pfd, 2, 1000) < 0 && errno != EINTR) {
            errorf(p->err, sizeof p->err, "poll: %s", strerror(errno));
            return -1;
        }
        if (p->rc != NULL && pfd[1].revents != 0 &&
            gc_rc_progress(p->rc, 0) < 0) {
            errorf(p->err, sizeof p->err, "rank session failed: %s",
                   gc_rc_error(p->rc));
            return -1;
        }
        if (pfd[0].revents == 0)
            continue;
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            errorf(p->err, sizeof p->err,
                   "the receiver process ended without reporting");
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

/* ---- sender (parent) -------------------------------------------------- */

/*
 * After a failure on the sending side, show the receiver's account if it
 * has one: it usually names the cause (its relay went away, a byte
 * differed).  A receiver still waiting for data says nothing in time.
 */
static void print_receiver_reason(const struct peer *sender, int report_fd)
{
    struct peer quiet = {.rc = NULL};
    struct child_report rep = sender->report;
    if ((sender->have_report ||
         read_report(&quiet, report_fd, &rep, sizeof rep, 2000) == 0) &&
        rep.err[0] != '\0')
        fprintf(stderr, PROG ": %s\n", rep.err);
}

/* The receiver's final report, unless peer_step() already read it. */
static int final_report(struct peer *sender, int report_fd,
                        struct child_report *rep)
{
    sender->watch_fd = -1;
    if (sender->have_report) {
        *rep = sender->report;
        return 0;
    }
    return read_report(sender, report_fd, rep, sizeof *rep, STALL_TIMEOUT_MS);
}

/* One echo round trip of `len` bytes; its duration in ns, or 0 on error. */
static uint64_t echo_round(struct peer *p, uint32_t dst, uint8_t *buf,
                           uint64_t len, uint64_t seed, int timeout_ms)
{
    pattern_fill(buf, len, seed);
    p->reply_len_expect = len;
    p->reply_seed = seed;
    uint64_t want = p->replies + 1;
    struct gc_rc_send *req = NULL;
    uint64_t t0 = gc_now_ns();
    if (gc_rc_isend(p->rc, dst, CONTEXT, TAG_ECHO, buf, len, &req) != 0) {
        errorf(p->err, sizeof p->err, "cannot send: %s", gc_rc_error(p->rc));
        return 0;
    }
    uint64_t deadline = t0 + ms_to_ns((uint64_t)timeout_ms);
    while (p->replies < want) {
        if (peer_step(p, 1000) != 0)
            goto fail;
        if (gc_now_ns() >= deadline) {
            errorf(p->err, sizeof p->err,
                   "no echo from rank %u within %d s (is the link between "
                   "the relays up?)",
                   dst, timeout_ms / 1000);
            goto fail;
        }
    }
    uint64_t rtt = gc_now_ns() - t0;
    /* The reply can only exist once our message was fully written. */
    gc_rc_send_free(req);
    return rtt > 0 ? rtt : 1;
fail:
    gc_rc_send_free(req);
    return 0;
}

struct slot {
    uint8_t *buf;
    struct gc_rc_send *req;
};

/* Stream the data messages; t0 is when the first one was queued. */
static int send_stream(struct peer *p, uint32_t dst, uint64_t *t0)
{
    const struct options *o = p->o;
    uint64_t count = (o->bytes + o->msg_size - 1) / o->msg_size;
    uint64_t window = SEND_WINDOW_BYTES / o->msg_size;
    if (window < 2)
        window = 2;
    if (window > SEND_WINDOW_MAX)
        window = SEND_WINDOW_MAX;
    if (window > count)
        window = count;
    int status = -1;
    struct slot *slots = calloc(window, sizeof *slots);
    if (slots == NULL) {
        errorf(p->err, sizeof p->err, "out of memory");
        goto cleanup;
    }
    for (uint64_t i = 0; i < window; i++) {
        slots[i].buf = malloc(o->msg_size);
        if (slots[i].buf == NULL) {
            errorf(p->err, sizeof p->err, "out of memory");
            goto cleanup;
        }
    }
    /* Messages go out in order and complete in order, so slots form a
     * ring: [head, head + busy) are in flight. */
    uint64_t next = 0, done = 0;
    *t0 = gc_now_ns();
    while (done < count) {
        while (next < count && next - done < window) {
            struct slot *s = &slots[next % window];
            uint64_t len = data_len(o, next);
            pattern_fill(s->buf, len, next);
            if (gc_rc_isend(p->rc, dst, CONTEXT, TAG_DATA, s->buf, len,
                            &s->req) != 0) {
                errorf(p->err, sizeof p->err, "cannot send: %s",
                       gc_rc_error(p->rc));
                goto cleanup;
            }
            next++;
        }
        if (peer_step(p, 1000) != 0)
            goto cleanup;
        while (done < next && gc_rc_send_done(slots[done % window].req)) {
            gc_rc_send_free(slots[done % window].req);
            slots[done % window].req = NULL;
            done++;
        }
    }
    status = 0;
cleanup:
    if (slots != NULL) {
        /* An unfinished request still points into its buffer: close the
         * session before the buffers go. */
        int unfinished = 0;
        for (uint64_t i = 0; i < window; i++)
            if (slots[i].req != NULL && !gc_rc_send_done(slots[i].req))
                unfinished = 1;
        if (unfinished) {
            gc_rc_close(p->rc, 0);
            p->rc = NULL;
        }
        for (uint64_t i = 0; i < window; i++) {
            gc_rc_send_free(slots[i].req);
            free(slots[i].buf);
        }
    }
    free(slots);
    return status;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static const char *tls_label(const struct options *o, const struct env *env)
{
    if (!env->managed)
        return "external";
    return o->plaintext ? "off" : "on";
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv)
{
    struct options o;
    parse_options(argc, argv, &o);

    int status = 1;
    char err[1024] = "";
    struct env env = {.relay = {{.site = "a"}, {.site = "b"}}};
    struct peer sender;
    int sender_ready = 0;
    pid_t child = 0;
    int report_fd = -1;
    uint64_t *rtts = NULL;
    uint8_t *echo_buf = NULL;

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: poll() must return so loops can notice g_stop. */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    const char *endpoint_a = o.relay_a, *endpoint_b = o.relay_b;
    if (o.relay_a == NULL) {
        env.managed = 1;
        if (setup_managed(&env, &o, err, sizeof err) != 0)
            goto cleanup;
        endpoint_a = env.endpoint_a;
        endpoint_b = env.endpoint_b;
    } else {
        int n = gc_token_read_file(o.token_file, env.token, sizeof env.token,
                                   err, sizeof err);
        if (n < 0)
            goto cleanup;
        env.token_len = (size_t)n;
    }

    /* Fork before our own session exists so the child holds no copy of
     * its socket. */
    child = start_receiver(&o, &env, endpoint_b, &report_fd, err, sizeof err);
    if (child < 0) {
        child = 0;
        goto cleanup;
    }
    if (peer_init(&sender, &o, 0) != 0) {
        snprintf(err, sizeof err, "out of memory");
        goto cleanup;
    }
    sender_ready = 1;
    /* The receiver writes 'R' once connected, or its report (which
     * starts with ok = 0, a zero byte) when it could not connect. */
    struct child_report rep = {0};
    if (read_report(&sender, report_fd, &rep, 1, CONNECT_RETRY_MS + 5000) !=
        0) {
        snprintf(err, sizeof err, "receiver: %s", sender.err);
        goto cleanup;
    }
    if (((uint8_t *)&rep)[0] != 'R') {
        if (read_report(&sender, report_fd, (uint8_t *)&rep + 1, sizeof rep - 1,
                        2000) == 0)
            snprintf(err, sizeof err, "%s", rep.err);
        else
            snprintf(err, sizeof err, "receiver: %s", sender.err);
        goto cleanup;
    }
    if (peer_connect(&sender, endpoint_a, env.token, env.token_len, o.rank_a) !=
        0) {
        snprintf(err, sizeof err, "%s", sender.err);
        goto cleanup;
    }
    sender.watch_fd = report_fd;

    /* Bring the link up (site a dials b on first need or at start) so the
     * measurement does not include connection set-up. */
    uint8_t warm[1];
    if (echo_round(&sender, o.rank_b, warm, 1, ECHO_SEED(0),
                   WARMUP_TIMEOUT_MS) == 0 ||
        sender.reply_bad) {
        snprintf(err, sizeof err, "warm-up: %s",
                 sender.reply_bad ? "echo came back altered" : sender.err);
        print_receiver_reason(&sender, report_fd);
        goto cleanup;
    }

    uint32_t chunk =
        env.managed ? (uint32_t)o.chunk : gc_rc_max_chunk(sender.rc);
    uint32_t streams = env.managed ? o.streams : 0;
    if (o.latency) {
        rtts = calloc(o.rounds, sizeof *rtts);
        echo_buf = malloc(o.msg_size > 0 ? o.msg_size : 1);
        if (rtts == NULL || echo_buf == NULL) {
            snprintf(err, sizeof err, "out of memory");
            goto cleanup;
        }
        for (uint32_t i = 0; i < o.rounds; i++) {
            rtts[i] = echo_round(&sender, o.rank_b, echo_buf, o.msg_size,
                                 ECHO_SEED(i + 1), STALL_TIMEOUT_MS);
            if (rtts[i] == 0) {
                snprintf(err, sizeof err, "round trip %u: %s", i, sender.err);
                print_receiver_reason(&sender, report_fd);
                goto cleanup;
            }
        }
        if (final_report(&sender, report_fd, &rep) != 0) {
            snprintf(err, sizeof err, "%s", sender.err);
            goto cleanup;
        }
        if (!rep.ok) {
            snprintf(err, sizeof err, "%s", rep.err);
            goto cleanup;
        }
        qsort(rtts, o.rounds, sizeof *rtts, cmp_u64);
        double median_us = (o.rounds % 2 ? (double)rtts[o.rounds / 2]
                                         : ((double)rtts[o.rounds / 2 - 1] +
                                            (double)rtts[o.rounds / 2]) /
                                               2.0) /
                           1e3;
        double min_us = (double)rtts[0] / 1e3;
        double p99_us = (double)rtts[(uint64_t)o.rounds * 99 / 100] / 1e3;
        const char *verified = sender.reply_bad ? "no" : "yes";
        if (o.csv)
            printf("msg_size,rounds,streams,chunk,tls,rtt_us_min,"
                   "rtt_us_median,rtt_us_p99,verified\n"
                   "%" PRIu64 ",%u,%u,%u,%s,%.1f,%.1f,%.1f,%s\n",
                   o.msg_size, o.rounds, streams, chunk, tls_label(&o, &env),
                   min_us, median_us, p99_us, verified);
        else
            printf(PROG ": mode=latency msg_size=%" PRIu64 " rounds=%u "
                        "streams=%u chunk=%u tls=%s rtt_us_min=%.1f "
                        "rtt_us_p99=%.1f rtt_us_median=%.1f verified=%s\n",
                   o.msg_size, o.rounds, streams, chunk, tls_label(&o, &env),
                   min_us, p99_us, median_us, verified);
        fflush(stdout);
        if (sender.reply_bad) {
            snprintf(err, sizeof err, "an echo came back altered");
            goto cleanup;
        }
        status = 0;
        goto cleanup;
    }

    uint64_t t0 = 0;
    if (send_stream(&sender, o.rank_b, &t0) != 0) {
        snprintf(err, sizeof err, "sender: %s", sender.err);
        print_receiver_reason(&sender, report_fd);
        goto cleanup;
    }
    if (final_report(&sender, report_fd, &rep) != 0) {
        snprintf(err, sizeof err, "%s", sender.err);
        goto cleanup;
    }
    if (!rep.ok) {
        snprintf(err, sizeof err, "%s", rep.err);
        goto cleanup;
    }
    /* Both clocks are CLOCK_MONOTONIC of this machine. */
    double seconds =
        rep.t_last_byte > t0 ? (double)(rep.t_last_byte - t0) / 1e9 : 1e-9;
    double mbps = (double)o.bytes / 1e6 / seconds;
    const char *verified = rep.verified ? "yes" : "no";
    if (o.csv)
        printf("bytes,msg_size,streams,chunk,tls,seconds,MBps,verified\n"
               "%" PRIu64 ",%" PRIu64 ",%u,%u,%s,%.3f,%.1f,%s\n",
               o.bytes, o.msg_size, streams, chunk, tls_label(&o, &env),
               seconds, mbps, verified);
    else
        printf(PROG ": bytes=%" PRIu64 " msg_size=%" PRIu64 " streams=%u "
                    "chunk=%u tls=%s seconds=%.3f MBps=%.1f verified=%s\n",
               o.bytes, o.msg_size, streams, chunk, tls_label(&o, &env),
               seconds, mbps, verified);
    fflush(stdout);
    if (!rep.verified) {
        snprintf(err, sizeof err, "%s", rep.err);
        goto cleanup;
    }
    status = 0;

cleanup:
    if (status != 0 && err[0] != '\0')
        fprintf(stderr, PROG ": %s\n", err);
    if (sender_ready)
        peer_destroy(&sender);
    if (report_fd >= 0)
        close(report_fd);
    /* The receiver closes its session by itself once it reported; give it
     * the time for that before stopping it. */
    stop_process(&child, status == 0 ? 5000 : 0, 2000);
    teardown_env(&env, status != 0);
    free(rtts);
    free(echo_buf);
    return status;
}
