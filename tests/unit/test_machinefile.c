/*
 * Machine file parser against the fixtures in tests/unit/machinefiles (the
 * directory is argv[1]).  Expected line numbers are written out: the
 * fixtures are short, and a shifted fixture fails loudly rather than
 * silently.  Files that would be unwieldy as fixtures (4 KiB lines, NUL
 * bytes, thousands of hosts) are generated in a temporary directory.
 */
#include "machinefile.h"
#include "unit_check.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *fixture_dir;
static char tmp_dir[] = "/tmp/test_machinefile.XXXXXX";

static void fixture_path(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", fixture_dir, name);
}

/* Load `path`; the error text (malloc'd, maybe "") in *errors. */
static int load_path(const char *path, struct machinefile *mf, char **errors)
{
    size_t len = 0;
    *errors = NULL;
    FILE *f = open_memstream(errors, &len);
    if (f == NULL) {
        perror("open_memstream");
        exit(2);
    }
    int rc = machinefile_load(path, mf, f);
    fclose(f);
    /* A failed load must hand back nothing to free. */
    if (rc != 0)
        CHECK(mf->sites == NULL && mf->site_count == 0,
              "%s: failed load left %u sites", path, mf->site_count);
    return rc;
}

static int load(const char *name, struct machinefile *mf, char **errors)
{
    char path[PATH_MAX];
    fixture_path(name, path, sizeof path);
    return load_path(path, mf, errors);
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

/* `dir/name:line: message` is among the errors. */
static void expect_at(const char *errors, const char *dir, const char *name,
                      int line, const char *message)
{
    char want[4096];
    snprintf(want, sizeof want, "%s/%s:%d: %s", dir, name, line, message);
    CHECK(has_line(errors, want), "missing error line\n  want: %s\n  got:\n%s",
          want, errors);
}

/* Load fixture `name`, which must fail with exactly `count` errors. */
static char *load_bad(const char *name, int count)
{
    struct machinefile mf;
    char *errors;
    CHECK(load(name, &mf, &errors) == -1, "%s accepted", name);
    CHECK(count_lines(errors) == count, "%s: want %d errors, got %d:\n%s", name,
          count, count_lines(errors), errors);
    return errors;
}

static void expect_host(const struct mf_site *s, uint32_t i, const char *name,
                        uint32_t slots, int line)
{
    CHECK(i < s->host_count, "site %s: no host %u", s->name, i);
    if (i >= s->host_count)
        return;
    const struct mf_host *h = &s->hosts[i];
    CHECK(strcmp(h->name, name) == 0 && h->slots == slots && h->line == line,
          "site %s host %u: want %s/%u/line %d, got %s/%u/line %d", s->name, i,
          name, slots, line, h->name, h->slots, h->line);
}

static void test_two_sites(void)
{
    struct machinefile mf;
    char *errors;
    CHECK(load("valid-two-sites.machines", &mf, &errors) == 0, "rejected:\n%s",
          errors);
    CHECK(errors[0] == '\0', "errors on success: %s", errors);
    free(errors);
    CHECK(mf.site_count == 2, "site_count %u", mf.site_count);
    if (mf.site_count != 2)
        goto cleanup;

    const struct mf_site *a = &mf.sites[0];
    CHECK(strcmp(a->name, "alpha") == 0 && a->first_line == 2, "alpha %s %d",
          a->name, a->first_line);
    CHECK(a->host_count == 2 && a->total_slots == 8, "alpha hosts %u slots %u",
          a->host_count, a->total_slots);
    expect_host(a, 0, "node01", 4, 2);
    expect_host(a, 1, "node02", 4, 3);
    CHECK(strcmp(a->relay_host, "gw-alpha") == 0 && a->relay_line == 4,
          "alpha relay %s line %d", a->relay_host, a->relay_line);
    CHECK(strcmp(a->relay_wan, "gw-alpha.example.org:7500") == 0, "wan %s",
          a->relay_wan);
    CHECK(strcmp(a->relay_local, "10.0.0.1:7400") == 0, "local %s",
          a->relay_local);
    CHECK(a->relay_connect == MF_CONNECT_AUTO, "connect %d", a->relay_connect);
    CHECK(a->fattree.levels == 0 && a->fattree_line == 0,
          "fattree %d levels, line %d", a->fattree.levels, a->fattree_line);

    const struct mf_site *b = &mf.sites[1];
    CHECK(strcmp(b->name, "beta") == 0 && b->first_line == 6, "beta %s %d",
          b->name, b->first_line);
    CHECK(b->host_count == 1 && b->total_slots == 8, "beta hosts %u slots %u",
          b->host_count, b->total_slots);
    expect_host(b, 0, "node11", 8, 6);
    CHECK(strcmp(b->relay_host, "gw-beta") == 0 && b->relay_line == 7,
          "beta relay %s line %d", b->relay_host, b->relay_line);
    CHECK(strcmp(b->relay_wan, "203.0.113.5:7500") == 0, "wan %s",
          b->relay_wan);
    CHECK(b->relay_local[0] == '\0', "local '%s'", b->relay_local);
    CHECK(b->relay_connect == MF_CONNECT_DIAL, "connect %d", b->relay_connect);

cleanup:
    machinefile_free(&mf);
    CHECK(mf.sites == NULL && mf.site_count == 0, "free did not reset");
    machinefile_free(&mf); /* twice is harmless */
}

static void test_features(void)
{
    struct machinefile mf;
    char *errors;
    uint32_t ranks[3];
    char err[256];
    CHECK(load("valid-features.machines", &mf, &errors) == 0, "rejected:\n%s",
          errors);
    free(errors);
    CHECK(mf.site_count == 3, "site_count %u", mf.site_count);
    if (mf.site_count != 3)
        goto cleanup;

    /* Order of first appearance, not of the relay lines or of names. */
    const struct mf_site *g = &mf.sites[0];
    CHECK(strcmp(g->name, "gamma") == 0 && g->first_line == 4, "gamma %s %d",
          g->name, g->first_line);
    CHECK(g->host_count == 3 && g->total_slots == 1000018,
          "gamma hosts %u slots %u", g->host_count, g->total_slots);
    expect_host(g, 0, "gw-c", 2, 4); /* the relay host also runs ranks */
    expect_host(g, 1, "c-01", 16, 5);
    expect_host(g, 2, "c-02", 1000000, 7);
    CHECK(strcmp(g->relay_host, "gw-c") == 0 && g->relay_line == 4,
          "gamma relay %s %d", g->relay_host, g->relay_line);
    CHECK(strcmp(g->relay_wan, "[2001:db8::7]:7500") == 0, "wan %s",
          g->relay_wan);
    CHECK(strcmp(g->relay_local, "unix:/run/gridrelay/gamma.sock") == 0,
          "local %s", g->relay_local);
    CHECK(g->relay_connect == MF_CONNECT_LISTEN, "connect %d",
          g->relay_connect);
    /* Given on the relay line and again, the same, on line 7. */
    CHECK(g->fattree.levels == 2 && g->fattree.arity[0] == 4 &&
              g->fattree.arity[1] == 2 && g->fattree_line == 4,
          "gamma fattree %d levels, line %d", g->fattree.levels,
          g->fattree_line);

    const struct mf_site *b = &mf.sites[1];
    CHECK(strcmp(b->name, "beta") == 0 && b->first_line == 6, "beta %s %d",
          b->name, b->first_line);
    /* "slots=99" follows a '#' on line 6: the default of 1 applies. */
    CHECK(b->host_count == 2 && b->total_slots == 4, "beta hosts %u slots %u",
          b->host_count, b->total_slots);
    expect_host(b, 0, "b-01", 1, 6);
    expect_host(b, 1, "b-02", 3, 10); /* CRLF line */
    CHECK(strcmp(b->relay_host, "gw-b") == 0 && b->relay_line == 8,
          "beta relay %s %d", b->relay_host, b->relay_line);
    CHECK(strcmp(b->relay_wan, "gw-b:1") == 0, "wan %s", b->relay_wan);
    CHECK(strcmp(b->relay_local, "/tmp/beta.sock") == 0, "local %s",
          b->relay_local);
    CHECK(b->relay_connect == MF_CONNECT_AUTO, "connect %d", b->relay_connect);
    /* Only on a host line (the CRLF one): 16 levels, arity 1 allowed. */
    static const int beta_tree[] = {1, 2, 3, 4, 5, 6, 7, 8,
                                    9, 1, 1, 1, 1, 1, 1, 2};
    CHECK(b->fattree.levels == 16 && b->fattree_line == 10,
          "beta fattree %d levels, line %d", b->fattree.levels,
          b->fattree_line);
    for (int i = 0; i < 16 && i < b->fattree.levels; i++)
        CHECK(b->fattree.arity[i] == beta_tree[i], "beta arity[%d] = %d", i,
              b->fattree.arity[i]);

    /* A relay-only site: no hosts, no slots, still a site. */
    const struct mf_site *a = &mf.sites[2];
    CHECK(strcmp(a->name, "alpha") == 0 && a->first_line == 9, "alpha %s %d",
          a->name, a->first_line);
    CHECK(a->host_count == 0 && a->hosts == NULL && a->total_slots == 0,
          "alpha hosts %u slots %u", a->host_count, a->total_slots);
    CHECK(strcmp(a->relay_host, "gw-a") == 0 && a->relay_line == 9,
          "alpha relay %s %d", a->relay_host, a->relay_line);
    CHECK(strcmp(a->relay_wan, "[fe80::1%eth0]:65535") == 0, "wan %s",
          a->relay_wan);
    CHECK(strcmp(a->relay_local, "[::1]:7400") == 0, "local %s",
          a->relay_local);
    CHECK(a->fattree.levels == 0, "alpha fattree %d", a->fattree.levels);

    /* The relay-only site gets no ranks even when every slot is used. */
    CHECK(machinefile_distribute(&mf, 1000020, ranks, err, sizeof err) == 0,
          "%s", err);
    CHECK(ranks[0] == 1000018 && ranks[1] == 2 && ranks[2] == 0,
          "1000020 -> %u %u %u", ranks[0], ranks[1], ranks[2]);
    CHECK(machinefile_distribute(&mf, 1000022, ranks, err, sizeof err) == 0,
          "%s", err);
    CHECK(ranks[0] == 1000018 && ranks[1] == 4 && ranks[2] == 0,
          "1000022 -> %u %u %u", ranks[0], ranks[1], ranks[2]);
    CHECK(machinefile_distribute(&mf, 1000023, ranks, err, sizeof err) == -1,
          "1000023 accepted");
    CHECK(strcmp(err, "1000023 ranks requested but the machine file has only "
                      "1000022 slots") == 0,
          "err '%s'", err);

cleanup:
    machinefile_free(&mf);
}

static void test_distribute(void)
{
    struct machinefile mf;
    char *errors;
    uint32_t r[3];
    char err[256];
    CHECK(load("distribute.machines", &mf, &errors) == 0, "rejected:\n%s",
          errors);
    free(errors);
    CHECK(mf.site_count == 3 && mf.sites[0].total_slots == 4 &&
              mf.sites[1].total_slots == 2 && mf.sites[2].total_slots == 8,
          "want slots 4,2,8");
    if (mf.site_count != 3)
        goto cleanup;

    static const struct {
        uint32_t np, r0, r1, r2;
    } ok[] = {{1, 1, 0, 0}, {4, 4, 0, 0}, {5, 4, 1, 0},
              {6, 4, 2, 0}, {7, 4, 2, 1}, {14, 4, 2, 8}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        memset(r, 0xff, sizeof r); /* stale values must be overwritten */
        CHECK(machinefile_distribute(&mf, ok[i].np, r, err, sizeof err) == 0,
              "np=%u: %s", ok[i].np, err);
        CHECK(r[0] == ok[i].r0 && r[1] == ok[i].r1 && r[2] == ok[i].r2,
              "np=%u -> %u,%u,%u", ok[i].np, r[0], r[1], r[2]);
    }

    CHECK(machinefile_distribute(&mf, 15, r, err, sizeof err) == -1,
          "np=15 accepted");
    CHECK(strcmp(err, "15 ranks requested but the machine file has only 14 "
                      "slots") == 0,
          "err '%s'", err);
    CHECK(machinefile_distribute(&mf, UINT32_MAX, r, err, sizeof err) == -1,
          "np=UINT32_MAX accepted");
    CHECK(machinefile_distribute(&mf, 0, r, err, sizeof err) == -1,
          "np=0 accepted");
    CHECK(strcmp(err, "0 ranks requested (need at least 1)") == 0, "err '%s'",
          err);
    CHECK(machinefile_distribute(&mf, 0, r, NULL, 0) == -1, "err NULL");

cleanup:
    machinefile_free(&mf);
}

static void test_unknown_key(void)
{
    const char *f = "err-unknown-key.machines";
    char *e = load_bad(f, 3);
    expect_at(e, fixture_dir, f, 2, "unknown key 'slot'");
    expect_at(e, fixture_dir, f, 3, "unknown key '4'");
    expect_at(e, fixture_dir, f, 4, "'=x' has no key name (want key=value)");
    free(e);
}

static void test_duplicate_key(void)
{
    const char *f = "err-duplicate-key.machines";
    char *e = load_bad(f, 3);
    expect_at(e, fixture_dir, f, 2, "key 'slots' given twice");
    expect_at(e, fixture_dir, f, 3, "'relay' given twice");
    expect_at(e, fixture_dir, f, 4, "key 'cluster' given twice");
    free(e);
}

static void test_no_value(void)
{
    const char *f = "err-no-value.machines";
    char *e = load_bad(f, 8);
    expect_at(e, fixture_dir, f, 2, "key 'slots' needs a value (slots=N)");
    expect_at(e, fixture_dir, f, 3, "key 'slots' needs a value (slots=N)");
    expect_at(e, fixture_dir, f, 4,
              "key 'cluster' needs a value (cluster=NAME)");
    expect_at(e, fixture_dir, f, 5,
              "'relay' takes no value (write just 'relay')");
    expect_at(e, fixture_dir, f, 6, "key 'wan' needs a value (wan=HOST:PORT)");
    expect_at(e, fixture_dir, f, 7,
              "key 'local' needs a value (local=ENDPOINT)");
    expect_at(e, fixture_dir, f, 7,
              "key 'connect' needs a value (connect=auto|dial|listen)");
    expect_at(e, fixture_dir, f, 7,
              "key 'fattree' needs a value (fattree=M1,M2,...)");
    free(e);
}

static void test_slots(void)
{
    const char *f = "err-slots.machines";
    static const struct {
        int line;
        const char *value;
    } bad[] = {{2, "0"},   {3, "-1"}, {4, "1000001"},
               {5, "abc"}, {6, "4x"}, {7, "99999999999999999999"},
               {8, "+4"},  {10, "0"}};
    char msg[256];
    char *e = load_bad(f, 8);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(msg, sizeof msg,
                 "bad slots value '%s' (want an integer 1..1000000)",
                 bad[i].value);
        expect_at(e, fixture_dir, f, bad[i].line, msg);
    }
    free(e);
}

static void test_cluster(void)
{
    const char *f = "err-cluster.machines";
    char msg[256];
    char *e = load_bad(f, 3);
    expect_at(e, fixture_dir, f, 2,
              "missing cluster=NAME (every line names its site)");
    expect_at(e, fixture_dir, f, 3,
              "bad cluster name 'al.pha' (want 1 to 63 letters, digits, '_' "
              "or '-')");
    snprintf(
        msg, sizeof msg,
        "bad cluster name '%.64s' (want 1 to 63 letters, digits, '_' or "
        "'-')",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    expect_at(e, fixture_dir, f, 4, msg);
    free(e);
}

static void test_host(void)
{
    const char *f = "err-host.machines";
    char *e = load_bad(f, 3);
    expect_at(e, fixture_dir, f, 2,
              "bad host name 'node@1' (want letters, digits, '.', '_' or '-')");
    expect_at(e, fixture_dir, f, 3, "host name longer than 255 characters");
    expect_at(e, fixture_dir, f, 5,
              "line starts with 'slots=4', not a host name (one host per "
              "line, host name first)");
    free(e);
}

static void test_relay_only(void)
{
    const char *f = "err-relay-only.machines";
    /* Line 5's fattree= is a site setting, valid on any line. */
    char *e = load_bad(f, 3);
    expect_at(e, fixture_dir, f, 2, "'wan' is only valid on the relay line");
    expect_at(e, fixture_dir, f, 3, "'local' is only valid on the relay line");
    expect_at(e, fixture_dir, f, 4,
              "'connect' is only valid on the relay line");
    free(e);

    f = "err-relay-no-wan.machines";
    e = load_bad(f, 1);
    expect_at(e, fixture_dir, f, 3,
              "relay line needs wan=HOST:PORT (the address peer relays dial), "
              "or service=ENDPOINT (a running gridrelay service)");
    free(e);
}

static void test_services(void)
{
    struct machinefile mf;
    char *errors;
    CHECK(load("valid-services.machines", &mf, &errors) == 0, "rejected:\n%s",
          errors);
    free(errors);
    CHECK(mf.site_count == 2, "site_count %u", mf.site_count);
    if (mf.site_count == 2) {
        const struct mf_site *n = &mf.sites[0], *s = &mf.sites[1];
        CHECK(strcmp(n->relay_service, "gw-n.example.org:7443") == 0 &&
                  n->relay_wan[0] == '\0' && n->relay_line == 3,
              "north: service '%s' wan '%s' line %d", n->relay_service,
              n->relay_wan, n->relay_line);
        CHECK(
            strcmp(s->relay_service, "unix:/run/gridrelay/control.sock") == 0 &&
                strcmp(s->relay_local, "10.2.0.1:7400") == 0,
            "south: service '%s' local '%s'", s->relay_service, s->relay_local);
    }
    machinefile_free(&mf);

    const char *f = "err-service.machines";
    char *e = load_bad(f, 6);
    expect_at(e, fixture_dir, f, 2,
              "bad service= endpoint 'unix:relative.sock' (the Unix socket "
              "path must be absolute)");
    expect_at(e, fixture_dir, f, 3,
              "wan= does not go with service= (the service's configuration "
              "says how it reaches its peers)");
    expect_at(e, fixture_dir, f, 4,
              "connect= does not go with service= (the service's "
              "configuration says how it reaches its peers)");
    expect_at(e, fixture_dir, f, 5,
              "site 's4' has no service= but site 's1' (line 2) names one: a "
              "job uses running services at every site or at none");
    expect_at(e, fixture_dir, f, 6,
              "'service' is only valid on the relay line");
    expect_at(e, fixture_dir, f, 6,
              "site 's5' has no relay (mark one host "
              "'relay')");
    free(e);
}

static void test_wan(void)
{
    const char *f = "err-wan.machines";
    static const struct {
        int line;
        const char *value, *why;
    } bad[] = {
        {2, "gw", "want HOST:PORT"},
        {3, "gw:0", "the port must be 1..65535"},
        {4, "gw:65536", "the port must be 1..65535"},
        {5, "gw:", "the port must be 1..65535"},
        {6, ":7500", "want HOST:PORT"},
        {7, "[::1]7500", "want [IPV6]:PORT"},
        {8, "[zz::1]:7500", "bad IPv6 address"},
        {9, "gw:75a", "the port must be 1..65535"},
        {10, "2001:db8::1:7500",
         "put an IPv6 address in brackets: [ADDR]:PORT"},
        {11, "unix:/tmp/x.sock", "peer relays dial over TCP: want HOST:PORT"},
        {12, "gw!:7500",
         "the host may contain only letters, digits, '.', '_' and '-'"},
        {13, "[::1:7500", "want [IPV6]:PORT"},
        {14, "[fe80::1%]:7500", "bad IPv6 zone"},
        {16, "wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww...",
         "longer than 255 characters"},
    };
    char msg[512];
    /* Line 15 names a host that cannot resolve: syntax is all we check. */
    char *e = load_bad(f, (int)(sizeof bad / sizeof bad[0]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(msg, sizeof msg, "bad wan= address '%s' (%s)", bad[i].value,
                 bad[i].why);
        expect_at(e, fixture_dir, f, bad[i].line, msg);
    }
    free(e);
}

static void test_local(void)
{
    const char *f = "err-local.machines";
    char msg[512];
    char *e = load_bad(f, 5);
    expect_at(e, fixture_dir, f, 2,
              "bad local= endpoint 'unix:relative.sock' (the Unix socket path "
              "must be absolute)");
    expect_at(e, fixture_dir, f, 3,
              "bad local= endpoint 'unix:' (the Unix socket path must be "
              "absolute)");
    char path[109];
    path[0] = '/';
    memset(path + 1, 'p', 107);
    path[108] = '\0';
    snprintf(msg, sizeof msg,
             "bad local= endpoint '%s' (the Unix socket path is longer than "
             "107 characters)",
             path);
    expect_at(e, fixture_dir, f, 4, msg);
    expect_at(e, fixture_dir, f, 5,
              "bad local= endpoint 'relative/path' (want HOST:PORT)");
    expect_at(e, fixture_dir, f, 6,
              "bad local= endpoint '10.0.0.1:99999' (the port must be "
              "1..65535)");
    free(e);
}

static void test_connect_fattree(void)
{
    const char *f = "err-connect.machines";
    char *e = load_bad(f, 2);
    expect_at(e, fixture_dir, f, 2,
              "bad connect value 'both' (want auto, dial or listen)");
    expect_at(e, fixture_dir, f, 3,
              "bad connect value 'Dial' (want auto, dial or listen)");
    free(e);

    /* Line 9 is the largest tree accepted: 16 levels, 2^28 leaves. */
    f = "err-fattree.machines";
    static const struct {
        int line;
        const char *value;
    } bad[] = {
        {2, "0"},    {3, "4,,2"},
        {4, "4,2,"}, {5, "2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2"},
        {6, "4,x"},  {7, "16384,16385"},
        {8, ",4"},   {10, "-4"},
        {11, "4,0"}, {12, "99999999999"},
        {13, "+4"},
    };
    char msg[256];
    e = load_bad(f, (int)(sizeof bad / sizeof bad[0]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(msg, sizeof msg,
                 "bad fattree value '%s' (want 1 to 16 comma-separated "
                 "positive integers with a product of at most 268435456)",
                 bad[i].value);
        expect_at(e, fixture_dir, f, bad[i].line, msg);
    }
    free(e);

    /* A bad value (line 6) sets nothing, so it conflicts with nothing. */
    f = "err-fattree-conflict.machines";
    e = load_bad(f, 4);
    expect_at(e, fixture_dir, f, 4,
              "site 'alpha' already has fattree=4,2 (line 2); every fattree= "
              "of a site must be the same");
    expect_at(e, fixture_dir, f, 6,
              "bad fattree value 'x' (want 1 to 16 comma-separated positive "
              "integers with a product of at most 268435456)");
    expect_at(e, fixture_dir, f, 7,
              "site 'alpha' already has fattree=4,2 (line 2); every fattree= "
              "of a site must be the same");
    expect_at(e, fixture_dir, f, 8,
              "site 'beta' already has fattree=2,4 (line 5); every fattree= "
              "of a site must be the same");
    free(e);
}

static void test_program(void)
{
    struct machinefile mf;
    char *e = NULL;
    CHECK(load("program.machines", &mf, &e) == 0, "program.machines: %s", e);
    free(e);
    if (mf.site_count == 2) {
        static const char *const want[] = {"./atm", "--steps", "10", "relay"};
        const struct mf_site *a = &mf.sites[0], *b = &mf.sites[1];
        CHECK(a->program_argc == 4 && a->program_line == 3,
              "alpha program: %d words, line %d", a->program_argc,
              a->program_line);
        for (int i = 0; i < 4 && i < a->program_argc; i++)
            CHECK(strcmp(a->program[i], want[i]) == 0, "word %d: '%s'", i,
                  a->program[i]);
        CHECK(b->program == NULL && b->program_line == 0, "beta has a program");
        machinefile_free(&mf);
    }

    /* Line 5: the words after program= are the program's, so the line
     * names no cluster. */
    const char *f = "err-program.machines";
    e = load_bad(f, 4);
    expect_at(e, fixture_dir, f, 2,
              "site 'alpha' already has program= (line 1); give a site's "
              "program once");
    expect_at(e, fixture_dir, f, 3,
              "key 'program' needs a value (program=PATH ARGS...)");
    expect_at(e, fixture_dir, f, 4,
              "key 'program' needs a value (program=PATH ARGS...)");
    expect_at(e, fixture_dir, f, 5,
              "missing cluster=NAME (every line names its site)");
    free(e);
}

static void test_sites(void)
{
    const char *f = "err-duplicate-host.machines";
    char *e = load_bad(f, 3);
    expect_at(e, fixture_dir, f, 5,
              "duplicate host 'node01' (first at line 3)");
    expect_at(e, fixture_dir, f, 7,
              "duplicate host 'node01' (first at line 3)");
    expect_at(e, fixture_dir, f, 8, "duplicate host 'gw-a' (first at line 4)");
    free(e);

    f = "err-no-relay.machines";
    e = load_bad(f, 2);
    expect_at(e, fixture_dir, f, 4,
              "site 'beta' has no relay (mark one host 'relay')");
    expect_at(e, fixture_dir, f, 6,
              "site 'gamma' has no relay (mark one host 'relay')");
    free(e);

    f = "err-two-relays.machines";
    e = load_bad(f, 1);
    expect_at(e, fixture_dir, f, 4,
              "site 'alpha' already has a relay ('ga1' at line 3); mark only "
              "one host 'relay'");
    free(e);

    f = "err-no-hosts.machines";
    e = load_bad(f, 1);
    expect_at(e, fixture_dir, f, 0, "no hosts");
    free(e);
    f = "err-empty.machines";
    e = load_bad(f, 1);
    expect_at(e, fixture_dir, f, 0, "no hosts");
    free(e);

    f = "no-such-file.machines";
    e = load_bad(f, 1);
    expect_at(e, fixture_dir, f, 0,
              "cannot open machine file: No such file or directory");
    free(e);
}

/* Every error of a file, in order: line order, then sites without relay. */
static void test_multi(void)
{
    const char *f = "err-multi.machines";
    static const struct {
        int line;
        const char *message;
    } all[] = {
        {3, "bad slots value '0' (want an integer 1..1000000)"},
        {3, "unknown key 'colour'"},
        {4, "'wan' is only valid on the relay line"},
        {5, "duplicate host 'n1' (first at line 3)"},
        {6, "bad wan= address 'gw:0' (the port must be 1..65535)"},
        {6, "bad connect value 'maybe' (want auto, dial or listen)"},
        {7, "missing cluster=NAME (every line names its site)"},
        {8, "site 'b' has no relay (mark one host 'relay')"},
    };
    char path[PATH_MAX];
    char *want = NULL;
    size_t want_len = 0;
    fixture_path(f, path, sizeof path);
    FILE *w = open_memstream(&want, &want_len);
    if (w == NULL) {
        perror("open_memstream");
        exit(2);
    }
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        fprintf(w, "%s:%d: %s\n", path, all[i].line, all[i].message);
    fclose(w);
    char *e = load_bad(f, 8);
    CHECK(strcmp(e, want) == 0, "\n  want:\n%s  got:\n%s", want, e);
    free(e);
    free(want);

    /* No error stream: still refused, nothing printed anywhere. */
    struct machinefile mf;
    CHECK(machinefile_load(path, &mf, NULL) == -1, "accepted without stream");
    CHECK(mf.sites == NULL && mf.site_count == 0, "left sites");
}

/* The shipped examples in conf/machinefiles must stay valid. */
static void test_examples(void)
{
    struct machinefile mf;
    char path[PATH_MAX];
    char *e;
    uint32_t r[3];
    char err[256];

    snprintf(path, sizeof path, "%s/../../../conf/machinefiles/%s", fixture_dir,
             "two-sites.machines");
    CHECK(load_path(path, &mf, &e) == 0, "%s rejected:\n%s", path, e);
    free(e);
    CHECK(mf.site_count == 2 && mf.sites[0].total_slots == 24 &&
              mf.sites[1].total_slots == 36 &&
              mf.sites[1].relay_connect == MF_CONNECT_DIAL &&
              mf.sites[0].fattree.levels == 2 &&
              mf.sites[0].fattree.arity[0] == 8 &&
              mf.sites[0].fattree.arity[1] == 3 &&
              mf.sites[1].fattree.levels == 0,
          "two-sites.machines parsed wrong");
    /* The header comment promises 24 + 16 for -np 40. */
    CHECK(mf.site_count == 2 &&
              machinefile_distribute(&mf, 40, r, err, sizeof err) == 0 &&
              r[0] == 24 && r[1] == 16,
          "two-sites -np 40");
    machinefile_free(&mf);

    snprintf(path, sizeof path, "%s/../../../conf/machinefiles/%s", fixture_dir,
             "localhost-3.machines");
    CHECK(load_path(path, &mf, &e) == 0, "%s rejected:\n%s", path, e);
    free(e);
    CHECK(mf.site_count == 3 && mf.sites[0].total_slots == 2 &&
              mf.sites[1].total_slots == 2 && mf.sites[2].total_slots == 2,
          "localhost-3.machines parsed wrong");
    machinefile_free(&mf);
}

static int write_tmp(const char *name, const char *text, size_t len, char *path,
                     size_t path_len)
{
    snprintf(path, path_len, "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    size_t n = fwrite(text, 1, len, f);
    return fclose(f) == 0 && n == len ? 0 : -1;
}

static void test_generated(void)
{
    static const char relay[] = "gw cluster=a relay wan=gw:7500\n";
    static char text[256 * 1024];
    char path[PATH_MAX], want[PATH_MAX + 128];
    struct machinefile mf;
    char *e;

    /* 4095 characters (newline excluded) is the longest line accepted. */
    int n = snprintf(text, sizeof text, "%s", relay);
    n += snprintf(text + n, sizeof text - (size_t)n, "n1 cluster=a #");
    memset(text + n, 'c', 4095 - strlen("n1 cluster=a #"));
    n += 4095 - (int)strlen("n1 cluster=a #");
    text[n++] = '\n';
    CHECK(write_tmp("max-line", text, (size_t)n, path, sizeof path) == 0,
          "write");
    CHECK(load_path(path, &mf, &e) == 0, "4095-char line rejected:\n%s", e);
    CHECK(mf.site_count == 1 && mf.sites[0].host_count == 1,
          "4095-char line not parsed");
    machinefile_free(&mf);
    free(e);

    /* One more is an error; the next line still has the right number. */
    memmove(text + n, text + n - 1, 1);
    text[n - 1] = 'c';
    n++;
    n += snprintf(text + n, sizeof text - (size_t)n, "n1 cluster=a slots=0\n");
    CHECK(write_tmp("long-line", text, (size_t)n, path, sizeof path) == 0,
          "write");
    CHECK(load_path(path, &mf, &e) == -1, "4096-char line accepted");
    CHECK(count_lines(e) == 2, "want 2 errors:\n%s", e);
    expect_at(e, tmp_dir, "long-line", 2,
              "line is longer than 4095 characters");
    expect_at(e, tmp_dir, "long-line", 3,
              "bad slots value '0' (want an integer 1..1000000)");
    free(e);

    static const char nul[] = "gw cluster=a relay wan=gw:7500\nn1\0 x\n";
    CHECK(write_tmp("nul", nul, sizeof nul - 1, path, sizeof path) == 0,
          "write");
    CHECK(load_path(path, &mf, &e) == -1, "NUL byte accepted");
    CHECK(count_lines(e) == 1, "want 1 error:\n%s", e);
    expect_at(e, tmp_dir, "nul", 2,
              "line contains a NUL byte (not a text file?)");
    free(e);

    /* 4295 hosts of 1000000 slots pass 2^32 - 1 slots at host 4295. */
    n = snprintf(text, sizeof text, "%s", relay);
    for (int i = 1; i <= 4296; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "n%d cluster=a slots=1000000\n", i);
    CHECK(write_tmp("many", text, (size_t)n, path, sizeof path) == 0, "write");
    CHECK(load_path(path, &mf, &e) == -1, "4.296e9 slots accepted");
    CHECK(count_lines(e) == 1, "want 1 error, got %d", count_lines(e));
    snprintf(want, sizeof want,
             "the machine file has more than 4294967295 slots in total");
    expect_at(e, tmp_dir, "many", 4296, want);
    free(e);

    /* 4294 such hosts are fine, and thousands of names hash correctly. */
    n = snprintf(text, sizeof text, "%s", relay);
    for (int i = 1; i <= 4294; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "n%d cluster=a slots=1000000\n", i);
    n += snprintf(text + n, sizeof text - (size_t)n, "n77 cluster=a\n");
    CHECK(write_tmp("dup", text, (size_t)n, path, sizeof path) == 0, "write");
    CHECK(load_path(path, &mf, &e) == -1, "duplicate among many accepted");
    CHECK(count_lines(e) == 1, "want 1 error:\n%s", e);
    expect_at(e, tmp_dir, "dup", 4296,
              "duplicate host 'n77' (first at line 78)");
    free(e);
    n -= (int)strlen("n77 cluster=a\n");
    CHECK(write_tmp("dup", text, (size_t)n, path, sizeof path) == 0, "write");
    CHECK(load_path(path, &mf, &e) == 0, "4294 hosts rejected:\n%.300s", e);
    CHECK(mf.site_count == 1 && mf.sites[0].host_count == 4294 &&
              mf.sites[0].total_slots == 4294000000u &&
              mf.sites[0].hosts[4293].line == 4295,
          "4294 hosts parsed wrong");
    machinefile_free(&mf);
    free(e);
}

static void remove_tmp(void)
{
    static const char *const names[] = {"max-line", "long-line", "nul", "many",
                                        "dup"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp_dir, names[i]);
        unlink(path);
    }
    rmdir(tmp_dir);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    fixture_dir = argv[1];
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }

    test_two_sites();
    test_features();
    test_distribute();
    test_unknown_key();
    test_duplicate_key();
    test_no_value();
    test_slots();
    test_cluster();
    test_host();
    test_relay_only();
    test_services();
    test_wan();
    test_local();
    test_connect_fattree();
    test_program();
    test_sites();
    test_multi();
    test_examples();
    test_generated();
    remove_tmp();

    return unit_check_report("");
}
