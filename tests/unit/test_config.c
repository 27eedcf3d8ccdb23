/*
 * Relay configuration loader against the fixtures in tests/unit/config
 * (the directory is argv[1]).  Fixture lines an error must point at carry
 * a trailing "# marker" comment, so editing a fixture cannot silently
 * shift the expected line numbers.
 */
#include "relay_config.h"
#include "unit_check.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *fixture_dir;
static char fixture_real[PATH_MAX]; /* what relative paths resolve against */
static struct relay_config cfg;     /* static: the struct is ~30 KiB */

static void fixture_path(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", fixture_dir, name);
}

/* Load fixture `name`; the error text (malloc'd, maybe "") in *errors. */
static int load(const char *name, char **errors)
{
    char path[PATH_MAX];
    size_t len = 0;
    fixture_path(name, path, sizeof path);
    *errors = NULL;
    FILE *f = open_memstream(errors, &len);
    if (f == NULL) {
        perror("open_memstream");
        exit(2);
    }
    int rc = relay_config_load(path, &cfg, f);
    fclose(f);
    return rc;
}

/* 1-based number of the fixture line ending in "# marker", or 0. */
static int line_of(const char *name, const char *marker)
{
    char path[PATH_MAX], want[256], text[1024];
    int line = 0, found = 0;
    fixture_path(name, path, sizeof path);
    snprintf(want, sizeof want, "# %s", marker);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    while (found == 0 && fgets(text, sizeof text, f) != NULL) {
        line++;
        size_t n = strcspn(text, "\n");
        while (n > 0 && text[n - 1] == ' ')
            n--;
        text[n] = '\0';
        size_t w = strlen(want);
        if (n >= w && strcmp(text + n - w, want) == 0)
            found = line;
    }
    fclose(f);
    return found;
}

/* True when some line of `errors` is exactly `want`. */
static bool has_line(const char *errors, const char *want)
{
    size_t len = strlen(want);
    for (const char *p = errors; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
        if (n == len && strncmp(p, want, len) == 0)
            return true;
        p = nl != NULL ? nl + 1 : NULL;
    }
    return false;
}

static int count_lines(const char *errors)
{
    int n = 0;
    for (const char *p = errors; *p != '\0'; p++)
        n += *p == '\n';
    return n;
}

/* `file:line: message` with the line of the fixture's `marker`. */
static void expect_at(const char *errors, const char *name, const char *marker,
                      const char *message)
{
    char want[2048];
    int line = line_of(name, marker);
    CHECK(line > 0, "%s has no '# %s' marker", name, marker);
    snprintf(want, sizeof want, "%s/%s:%d: %s", fixture_dir, name, line,
             message);
    CHECK(has_line(errors, want), "missing error line\n  want: %s\n  got:\n%s",
          want, errors);
}

/* `file: message`, for problems no line can be blamed for. */
static void expect_noline(const char *errors, const char *name,
                          const char *message)
{
    char want[2048];
    snprintf(want, sizeof want, "%s/%s: %s", fixture_dir, name, message);
    CHECK(has_line(errors, want), "missing error line\n  want: %s\n  got:\n%s",
          want, errors);
}

static void expect_count(const char *errors, const char *name, int n)
{
    CHECK(count_lines(errors) == n, "%s: want %d errors, got %d:\n%s", name, n,
          count_lines(errors), errors);
}

static void test_minimal_defaults(void)
{
    char *errors;
    int rc = load("minimal.conf", &errors);
    CHECK(rc == 0, "minimal.conf rejected:\n%s", errors);
    expect_count(errors, "minimal.conf", 0);
    CHECK(strcmp(cfg.site_name, "alpha") == 0, "site '%s'", cfg.site_name);
    CHECK(cfg.job_id == 0, "job_id %u", cfg.job_id);
    CHECK(cfg.first_rank == 0, "first_rank %u", cfg.first_rank);
    CHECK(cfg.rank_count == 4, "rank_count %u", cfg.rank_count);
    CHECK(cfg.local_tcp[0] == '\0', "local.tcp '%s'", cfg.local_tcp);
    CHECK(cfg.wan_listen[0] == '\0', "wan.listen '%s'", cfg.wan_listen);
    CHECK(cfg.http_listen[0] == '\0', "http.listen '%s'", cfg.http_listen);
    CHECK(cfg.streams == 8, "streams %u", cfg.streams);
    CHECK(cfg.chunk_size == 256 * 1024, "chunk_size %u", cfg.chunk_size);
    CHECK(cfg.wan_plaintext == 0, "plaintext %d", cfg.wan_plaintext);
    CHECK(cfg.tcp_congestion[0] == '\0', "congestion '%s'", cfg.tcp_congestion);
    CHECK(cfg.tcp_sndbuf == 0 && cfg.tcp_rcvbuf == 0, "bufs %u %u",
          cfg.tcp_sndbuf, cfg.tcp_rcvbuf);
    CHECK(cfg.tcp_nodelay == 1 && cfg.tcp_keepalive == 1, "nodelay/keepalive");
    CHECK(cfg.tcp_keepalive_idle_s == 30, "keepalive_idle %u",
          cfg.tcp_keepalive_idle_s);
    CHECK(cfg.rank_credit == 32ull << 20, "rank_credit %llu",
          (unsigned long long)cfg.rank_credit);
    CHECK(cfg.link_window == 64ull << 20, "link_window %llu",
          (unsigned long long)cfg.link_window);
    CHECK(cfg.session_high_watermark == 16ull << 20 &&
              cfg.session_low_watermark == 4ull << 20,
          "session watermarks");
    CHECK(cfg.link_high_watermark == 32ull << 20 &&
              cfg.link_low_watermark == 8ull << 20,
          "link watermarks");
    CHECK(cfg.ack_interval_ms == 5, "ack_interval %u", cfg.ack_interval_ms);
    CHECK(cfg.ping_interval_ms == 1000 && cfg.stream_timeout_ms == 10000 &&
              cfg.reconnect_min_ms == 100 && cfg.reconnect_max_ms == 5000 &&
              cfg.peer_give_up_ms == 30000,
          "liveness defaults");
    CHECK(strcmp(cfg.log_level, "info") == 0, "log.level '%s'", cfg.log_level);
    CHECK(cfg.log_file[0] == '\0', "log.file '%s'", cfg.log_file);
    CHECK(cfg.admin_enabled == 0, "admin %d", cfg.admin_enabled);
    CHECK(cfg.peer_count == 0, "peer_count %u", cfg.peer_count);

    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, "%s/minimal.conf", fixture_real);
    CHECK(strcmp(cfg.source_file, want) == 0, "source_file '%s'",
          cfg.source_file);
    free(errors);

    /* relay_config_defaults alone must agree with what loading applied. */
    struct relay_config *d = calloc(1, sizeof *d);
    relay_config_defaults(d);
    CHECK(d->streams == 8 && d->chunk_size == 262144 && d->tcp_nodelay == 1 &&
              strcmp(d->log_level, "info") == 0 && d->peer_count == 0,
          "relay_config_defaults");
    free(d);
}

static void test_full(void)
{
    char *errors;
    char want[PATH_MAX + 64];
    int rc = load("full.conf", &errors);
    CHECK(rc == 0, "full.conf rejected:\n%s", errors);
    expect_count(errors, "full.conf", 0);
    free(errors);

    CHECK(cfg.job_id == 4294967295u, "job_id %u", cfg.job_id);
    CHECK(cfg.first_rank == 8 && cfg.rank_count == 4, "ranks");
    CHECK(strcmp(cfg.local_tcp, "127.0.0.1:7400") == 0, "local.tcp '%s'",
          cfg.local_tcp);
    CHECK(strcmp(cfg.wan_listen, "127.0.0.1:7500") == 0, "wan.listen");
    CHECK(cfg.streams == 16, "streams %u", cfg.streams);
    CHECK(cfg.chunk_size == 1048576, "chunk_size %u", cfg.chunk_size);
    CHECK(strcmp(cfg.tcp_congestion, "reno") == 0, "congestion");
    CHECK(cfg.tcp_sndbuf == 4194304, "sndbuf %u", cfg.tcp_sndbuf);
    CHECK(cfg.tcp_rcvbuf == 8388608, "rcvbuf %u", cfg.tcp_rcvbuf);
    CHECK(cfg.tcp_nodelay == 0 && cfg.tcp_keepalive == 0, "tcp bools");
    CHECK(cfg.tcp_keepalive_idle_s == 60, "keepalive_idle");
    /* Size suffixes: K, G, MiB, MB, plain integer, lower case. */
    CHECK(cfg.rank_credit == 262144, "256K -> %llu",
          (unsigned long long)cfg.rank_credit);
    CHECK(cfg.link_window == 4294967296ull, "4G -> %llu",
          (unsigned long long)cfg.link_window);
    CHECK(cfg.session_high_watermark == 32ull << 20, "32MiB");
    CHECK(cfg.session_low_watermark == 8ull << 20, "8MB");
    CHECK(cfg.link_high_watermark == 64ull << 20, "67108864");
    CHECK(cfg.link_low_watermark == 16ull << 20, "16m");
    CHECK(cfg.ack_interval_ms == 10, "ack_interval");
    CHECK(cfg.ping_interval_ms == 500 && cfg.stream_timeout_ms == 4000 &&
              cfg.reconnect_min_ms == 50 && cfg.reconnect_max_ms == 2000 &&
              cfg.peer_give_up_ms == 60000,
          "liveness");
    CHECK(strcmp(cfg.http_listen, "127.0.0.1:7600") == 0, "http.listen");
    CHECK(cfg.admin_enabled == 1, "admin");
    CHECK(strcmp(cfg.log_level, "debug") == 0, "log.level");

    /* Relative paths resolve against the config file's directory. */
    snprintf(want, sizeof want, "%s/job.token", fixture_real);
    CHECK(strcmp(cfg.token_file, want) == 0, "token_file '%s'", cfg.token_file);
    snprintf(want, sizeof want, "%s/dummy.crt", fixture_real);
    CHECK(strcmp(cfg.tls_cert, want) == 0, "tls.cert '%s'", cfg.tls_cert);
    snprintf(want, sizeof want, "%s/./dummy.key", fixture_real);
    CHECK(strcmp(cfg.tls_key, want) == 0, "tls.key '%s'", cfg.tls_key);
    snprintf(want, sizeof want, "%s/ca.crt", fixture_real);
    CHECK(strcmp(cfg.tls_ca, want) == 0, "tls.ca '%s'", cfg.tls_ca);
    snprintf(want, sizeof want, "%s/logs/relay.log", fixture_real);
    CHECK(strcmp(cfg.log_file, want) == 0, "log.file '%s'", cfg.log_file);

    CHECK(cfg.peer_count == 4, "peer_count %u", cfg.peer_count);
    if (cfg.peer_count != 4)
        return;
    const struct relay_peer_config *p = cfg.peers;
    CHECK(strcmp(p[0].name, "beta") == 0 && p[0].first_rank == 0 &&
              p[0].rank_count == 8 &&
              strcmp(p[0].address, "127.0.0.1:7501") == 0 &&
              p[0].connect == RELAY_CONNECT_AUTO,
          "peer beta");
    CHECK(p[0].source_line == line_of("full.conf", "peer-beta"),
          "beta source_line %d", p[0].source_line);
    CHECK(p[1].address[0] == '\0' && p[1].connect == RELAY_CONNECT_AUTO,
          "peer Aardvark defaults");
    CHECK(p[2].connect == RELAY_CONNECT_LISTEN, "gamma connect");
    CHECK(p[3].connect == RELAY_CONNECT_DIAL, "delta connect");
    /* "alpha" < "beta" so we dial; "Aardvark" < "alpha" so it dials us. */
    CHECK(relay_config_peer_mode(&cfg, &p[0]) == RELAY_CONNECT_DIAL,
          "auto -> dial");
    CHECK(relay_config_peer_mode(&cfg, &p[1]) == RELAY_CONNECT_LISTEN,
          "auto -> listen");
    CHECK(relay_config_peer_mode(&cfg, &p[2]) == RELAY_CONNECT_LISTEN,
          "explicit listen");
    CHECK(relay_config_peer_mode(&cfg, &p[3]) == RELAY_CONNECT_DIAL,
          "explicit dial");
}

struct bound {
    const char *key; /* also the fixture marker */
    const char *below, *above;
    const char *range;
};

static const struct bound bounds[] = {
    {"job_id", "-1", "4294967296", "0..4294967295"},
    {"first_rank", "-1", "16777216", "0..16777215"},
    {"rank_count", "0", "16777217", "1..16777216"},
    {"wan.streams", "0", "65", "1..64"},
    {"wan.chunk_size", "4095", "16777217", "4K..16M"},
    {"tcp.sndbuf", "-1", "1025M", "0..1G"},
    {"tcp.rcvbuf", "-1", "1073741825", "0..1G"},
    {"tcp.keepalive_idle", "0", "7201", "1..7200"},
    {"flow.rank_credit", "63K", "1025M", "64K..1G"},
    {"flow.link_window", "1023K", "4097M", "1M..4G"},
    {"flow.session_high_watermark", "65535", "5G", "64K..4G"},
    {"flow.session_low_watermark", "63K", "4294967297", "64K..4G"},
    {"flow.link_high_watermark", "63K", "4294967297", "64K..4G"},
    {"flow.link_low_watermark", "63K", "4100MiB", "64K..4G"},
    {"flow.ack_interval_ms", "0", "1001", "1..1000"},
    {"liveness.ping_interval_ms", "49", "60001", "50..60000"},
    {"liveness.stream_timeout_ms", "199", "600001", "200..600000"},
    {"liveness.reconnect_min_ms", "9", "60001", "10..60000"},
    {"liveness.reconnect_max_ms", "9", "600001", "10..600000"},
    {"liveness.peer_give_up_ms", "99", "3600001", "100..3600000"},
    {"peers[0].first_rank", "-1", "16777216", "0..16777215"},
    {"peers[0].rank_count", "0", "16777217", "1..16777216"},
};
#define BOUND_COUNT ((int)(sizeof bounds / sizeof bounds[0]))

static void test_bounds(const char *name, bool above)
{
    char *errors;
    char msg[256];
    int rc = load(name, &errors);
    CHECK(rc == -1, "%s accepted", name);
    for (int i = 0; i < BOUND_COUNT; i++) {
        snprintf(msg, sizeof msg, "%s: %s is out of range %s", bounds[i].key,
                 above ? bounds[i].above : bounds[i].below, bounds[i].range);
        expect_at(errors, name, bounds[i].key, msg);
    }
    /* One error per key: rejected values must not cascade. */
    expect_count(errors, name, BOUND_COUNT);
    free(errors);
}

static void test_unknown_keys(void)
{
    const char *f = "unknown.conf";
    char *errors;
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    expect_at(errors, f, "unknown-top", "unknown key 'sites'");
    expect_at(errors, f, "unknown-local", "unknown key 'local.tcp_port'");
    expect_at(errors, f, "unknown-wan", "unknown key 'wan.stream'");
    expect_at(errors, f, "unknown-group", "unknown key 'metrics'");
    expect_at(errors, f, "unknown-peer", "unknown key 'peers[0].port'");
    expect_count(errors, f, 5);
    free(errors);
}

static void test_wrong_types(void)
{
    const char *f = "types.conf";
    const char *size = "a size (integer or string like \"256K\")";
    const char *boolean = "a boolean (true or false)";
    char msg[256];
    char *errors;
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    expect_at(errors, f, "site", "site: expected a string, got an integer");
    expect_at(errors, f, "rank_count",
              "rank_count: expected an integer, got a string");
    expect_at(errors, f, "job_id", "job_id: expected an integer, got a float");
    snprintf(msg, sizeof msg, "wan.plaintext: expected %s, got an integer",
             boolean);
    expect_at(errors, f, "wan.plaintext", msg);
    expect_at(errors, f, "wan.streams",
              "wan.streams: expected an integer, got a string");
    snprintf(msg, sizeof msg, "wan.chunk_size: expected %s, got a boolean",
             size);
    expect_at(errors, f, "wan.chunk_size", msg);
    expect_at(errors, f, "tcp", "tcp: expected a group, got an integer");
    snprintf(msg, sizeof msg, "http.admin: expected %s, got a string", boolean);
    expect_at(errors, f, "http.admin", msg);
    expect_at(errors, f, "log.level",
              "log.level: expected a string, got an integer");
    snprintf(msg, sizeof msg, "flow.rank_credit: expected %s, got an array",
             size);
    expect_at(errors, f, "flow.rank_credit", msg);
    expect_at(errors, f, "peers[0].first_rank",
              "peers[0].first_rank: expected an integer, got a string");
    expect_at(errors, f, "peers[0].address",
              "peers[0].address: expected a string, got an integer");
    expect_at(errors, f, "peers[1]",
              "peers[1]: expected a group, got a string");
    expect_count(errors, f, 13);
    free(errors);
}

static void test_syntax_error(void)
{
    char *errors;
    CHECK(load("syntax.conf", &errors) == -1, "syntax.conf accepted");
    expect_at(errors, "syntax.conf", "syntax-error", "syntax error");
    expect_count(errors, "syntax.conf", 1);
    free(errors);
}

static void test_unreadable_files(void)
{
    const char *f = "files.conf";
    char msg[PATH_MAX + 128];
    char *errors;
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    snprintf(msg, sizeof msg,
             "tls.cert: cannot read '%s/missing.crt': No such file or "
             "directory",
             fixture_real);
    expect_at(errors, f, "tls.cert", msg);
    snprintf(msg, sizeof msg, "tls.key: cannot read '%s/.': Is a directory",
             fixture_real);
    expect_at(errors, f, "tls.key", msg);
    expect_at(errors, f, "tls.ca",
              "tls.ca: cannot read '/nonexistent/ca.crt': No such file or "
              "directory");
    snprintf(msg, sizeof msg,
             "token_file: cannot read '%s/missing.token': No such file or "
             "directory",
             fixture_real);
    expect_at(errors, f, "token_file", msg);
    expect_count(errors, f, 4);
    free(errors);
}

static void test_congestion(void)
{
    /* Without the kernel's list the loader accepts any name, by design. */
    if (access("/proc/sys/net/ipv4/tcp_available_congestion_control", R_OK) !=
        0) {
        fprintf(stderr, "skipping congestion test: no /proc list\n");
        return;
    }
    char *errors;
    CHECK(load("congestion.conf", &errors) == -1, "nosuchcc accepted");
    char want[256];
    snprintf(want, sizeof want,
             "%s/congestion.conf:%d: tcp.congestion: "
             "congestion control 'nosuchcc' is not available",
             fixture_dir, line_of("congestion.conf", "tcp.congestion"));
    CHECK(strncmp(errors, want, strlen(want)) == 0, "want '%s...', got:\n%s",
          want, errors);
    expect_count(errors, "congestion.conf", 1);
    free(errors);
}

static void test_limits(void)
{
    const char *f = "limits.conf";
    char *errors;
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    expect_at(errors, f, "rank_count",
              "rank_count: ranks 16777215..16777216 go beyond the largest "
              "grid rank 16777215");
    expect_at(errors, f, "flow.session_low_watermark",
              "flow.session_low_watermark (32M) exceeds "
              "flow.session_high_watermark (16M)");
    expect_at(errors, f, "flow.link_low_watermark",
              "flow.link_low_watermark (8M) exceeds flow.link_high_watermark "
              "(4M)");
    expect_at(errors, f, "liveness.reconnect_max_ms",
              "liveness.reconnect_max_ms (50) is below "
              "liveness.reconnect_min_ms (100)");
    expect_at(errors, f, "liveness.stream_timeout_ms",
              "liveness.stream_timeout_ms (2000) must exceed "
              "liveness.ping_interval_ms (2000)");
    expect_count(errors, f, 5);
    free(errors);
}

static void test_ranks(void)
{
    const char *f = "ranks.conf";
    char *errors;
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    expect_at(errors, f, "gamma",
              "peers[1] (gamma): ranks 3..4 overlap this site's ranks 0..3");
    expect_at(errors, f, "gamma",
              "peers[1] (gamma): ranks 3..4 overlap peers[0] (beta) ranks "
              "4..7");
    expect_at(errors, f, "delta",
              "peers[2] (delta): ranks 16777215..16777216 go beyond the "
              "largest grid rank 16777215");
    expect_count(errors, f, 3);
    free(errors);
}

static void test_peers(void)
{
    const char *f = "peers.conf";
    char *errors;
    char msg[256];
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    expect_at(errors, f, "peers[0]",
              "peers[0] (beta): address is required because we dial "
              "(connect = auto and our name sorts first)");
    snprintf(msg, sizeof msg,
             "peers[1]: duplicate peer name 'beta' (first used by peers[0] "
             "at line %d)",
             line_of(f, "peers[0]"));
    expect_at(errors, f, "peers[1].name", msg);
    expect_at(errors, f, "peers[2].name",
              "peers[2]: 'alpha' is this site's own name");
    expect_at(errors, f, "peers[2]",
              "peers[2] (alpha): wan.listen is required because the peer "
              "dials us");
    expect_at(errors, f, "peers[3].name",
              "peers[3].name: 'bad name!' is not a valid site name (1 to 63 "
              "letters, digits, '_' or '-')");
    expect_at(errors, f, "peers[3].address",
              "peers[3].address: bad address '127.0.0.1' (want host:port)");
    expect_at(errors, f, "peers[4].address",
              "peers[4].address: bad port in '127.0.0.1:99999'");
    expect_at(errors, f, "peers[4].connect",
              "peers[4].connect: unknown value 'sideways' (want one of: "
              "auto, dial, listen)");
    expect_at(errors, f, "peers[5]", "peers[5]: missing required key 'name'");
    expect_at(errors, f, "peers[6]",
              "peers[6]: missing required key 'first_rank'");
    expect_at(errors, f, "peers[6]",
              "peers[6]: missing required key 'rank_count'");
    expect_at(errors, f, "peers[7]",
              "peers[7] (aaa): wan.listen is required because the peer dials "
              "us (connect = auto and its name sorts first)");
    expect_count(errors, f, 12);
    free(errors);
}

static void test_missing_keys(void)
{
    const char *f = "missing.conf";
    char *errors;
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    expect_at(errors, f, "peers",
              "peers: expected a list of groups, got an integer");
    expect_noline(errors, f, "missing required key 'site'");
    expect_noline(errors, f, "missing required key 'rank_count'");
    expect_noline(errors, f, "missing required key 'token_file'");
    expect_noline(errors, f,
                  "local: set local.unix or local.tcp (or both) so ranks can "
                  "connect");
    expect_noline(errors, f,
                  "missing required key 'tls.cert' (TLS is on; "
                  "wan.plaintext = false)");
    expect_noline(errors, f,
                  "missing required key 'tls.key' (TLS is on; wan.plaintext "
                  "= false)");
    expect_noline(errors, f,
                  "missing required key 'tls.ca' (TLS is on; wan.plaintext = "
                  "false)");
    expect_count(errors, f, 8);
    free(errors);
}

static void test_multiple_errors(void)
{
    const char *f = "multi.conf";
    char *errors;
    char msg[PATH_MAX + 128];
    CHECK(load(f, &errors) == -1, "%s accepted", f);
    expect_at(errors, f, "unknown", "unknown key 'colour'");
    expect_at(errors, f, "wan.streams",
              "wan.streams: 100 is out of range 1..64");
    expect_at(errors, f, "wan.chunk_size",
              "wan.chunk_size: bad size 'lots' (want a number with an "
              "optional K, M or G suffix)");
    expect_at(errors, f, "job_id",
              "job_id: integer is out of range 0..4294967295");
    snprintf(msg, sizeof msg,
             "tls.cert: cannot read '%s/nope.crt': No such file or directory",
             fixture_real);
    expect_at(errors, f, "tls.cert", msg);
    snprintf(msg, sizeof msg,
             "peers[1]: duplicate peer name 'beta' (first used by peers[0] "
             "at line %d)",
             line_of(f, "first-beta"));
    expect_at(errors, f, "duplicate", msg);
    expect_at(errors, f, "local.unix",
              "local.unix: 'relay.sock' is not an absolute path");
    expect_at(errors, f, "http.listen",
              "http.listen: bad address 'no-port-here' (want host:port)");
    expect_count(errors, f, 8);
    free(errors);
}

static void test_no_such_file(void)
{
    char *errors;
    CHECK(load("does-not-exist.conf", &errors) == -1, "missing file loaded");
    expect_noline(errors, "does-not-exist.conf",
                  "cannot read: No such file or directory");
    expect_count(errors, "does-not-exist.conf", 1);
    free(errors);
}

static void test_reference(void)
{
    static const char *const names[] = {
        "site",
        "job_id",
        "first_rank",
        "rank_count",
        "token_file",
        "local.unix",
        "local.tcp",
        "wan.listen",
        "wan.streams",
        "wan.chunk_size",
        "wan.plaintext",
        "tls.cert",
        "tls.key",
        "tls.ca",
        "tcp.congestion",
        "tcp.sndbuf",
        "tcp.rcvbuf",
        "tcp.nodelay",
        "tcp.keepalive",
        "tcp.keepalive_idle",
        "flow.rank_credit",
        "flow.link_window",
        "flow.session_high_watermark",
        "flow.session_low_watermark",
        "flow.link_high_watermark",
        "flow.link_low_watermark",
        "flow.ack_interval_ms",
        "liveness.ping_interval_ms",
        "liveness.stream_timeout_ms",
        "liveness.reconnect_min_ms",
        "liveness.reconnect_max_ms",
        "liveness.peer_give_up_ms",
        "http.listen",
        "http.admin",
        "log.level",
        "log.file",
        "peers.name",
        "peers.first_rank",
        "peers.rank_count",
        "peers.address",
        "peers.connect",
    };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    relay_config_print_reference(f);
    fclose(f);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "\n%s (", names[i]);
        CHECK(strstr(text, want) != NULL, "reference lacks '%s'", names[i]);
    }
    CHECK(strstr(text, "wan.chunk_size (size 4K..16M, default 256K)") != NULL,
          "chunk_size line:\n%s", text);
    CHECK(strstr(text, "log.level (enum error|warn|info|debug, default "
                       "\"info\")") != NULL,
          "log.level line");
    free(text);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    fixture_dir = argv[1];
    if (realpath(fixture_dir, fixture_real) == NULL) {
        perror(fixture_dir);
        return 2;
    }

    test_minimal_defaults();
    test_full();
    test_bounds("below.conf", false);
    test_bounds("above.conf", true);
    test_unknown_keys();
    test_wrong_types();
    test_syntax_error();
    test_unreadable_files();
    test_congestion();
    test_limits();
    test_ranks();
    test_peers();
    test_missing_keys();
    test_multiple_errors();
    test_no_such_file();
    test_reference();

    return unit_check_report("");
}
