/*
 * gridwan's units (times, rates, percentages, subnets) and command line:
 * values, defaults, and the one-line errors that name the option.
 */
#include "unit_check.h"
#include "wan_options.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void time_ok(const char *text, uint64_t bare, uint64_t want)
{
    uint64_t ns = 0;
    int rc = wan_parse_time(text, bare, &ns);
    CHECK(rc == 0 && ns == want, "'%s': rc %d, %" PRIu64 " ns, want %" PRIu64,
          text, rc, ns, want);
}

static void time_bad(const char *text, uint64_t bare)
{
    uint64_t ns;
    CHECK(wan_parse_time(text, bare, &ns) == -1, "'%s' accepted", text);
}

static void test_times(void)
{
    time_ok("20ms", 0, 20000000);
    time_ok("1.5ms", 0, 1500000);
    time_ok("250us", 0, 250000);
    time_ok("0.25ms", 0, 250000);
    time_ok("2s", 0, 2000000000);
    time_ok("0.000000001s", 0, 1);
    time_ok("7ns", 0, 7);
    time_ok("0ms", 0, 0);
    time_ok("20MS", 0, 20000000);
    time_ok("50", 1000000, 50000000);
    time_ok("3", 1000000000, 3000000000);
    time_ok("3ms", 1000000000, 3000000);
    time_bad("20", 0);
    time_bad("", 0);
    time_bad("ms", 0);
    time_bad("20 ms", 0);
    time_bad("-1ms", 0);
    time_bad("+1ms", 0);
    time_bad("1e3ms", 0);
    time_bad("1.ms", 0);
    time_bad(".5ms", 0);
    time_bad("1.2.3ms", 0);
    time_bad("20min", 0);
    time_bad("20mss", 0);
    time_bad("0.0000000001s", 0);
    time_bad("18446744073709551616ns", 0);
    time_bad("99999999999s", 0);
}

static void rate_ok(const char *text, uint64_t want)
{
    uint64_t bps = 0;
    int rc = wan_parse_rate(text, &bps);
    CHECK(rc == 0 && bps == want, "'%s': rc %d, %" PRIu64 ", want %" PRIu64,
          text, rc, bps, want);
}

static void rate_bad(const char *text)
{
    uint64_t bps;
    CHECK(wan_parse_rate(text, &bps) == -1, "'%s' accepted", text);
}

static void test_rates(void)
{
    rate_ok("1gbit", 1000000000);
    rate_ok("1Gbit", 1000000000);
    rate_ok("100mbit", 100000000);
    rate_ok("1000Mbit", 1000000000);
    rate_ok("1.5gbit", 1500000000);
    rate_ok("64kbit", 64000);
    rate_ok("9600bit", 9600);
    rate_ok("0.5mbit", 500000);
    rate_bad("100");
    rate_bad("1gb");
    rate_bad("1gbps");
    rate_bad("fast");
    rate_bad("-1mbit");
    rate_bad("1 mbit");
}

static void percent_ok(const char *text, double want)
{
    double p = -1;
    int rc = wan_parse_percent(text, &p);
    CHECK(rc == 0 && fabs(p - want) < 1e-15, "'%s': rc %d, %g, want %g", text,
          rc, p, want);
}

static void percent_bad(const char *text)
{
    double p;
    CHECK(wan_parse_percent(text, &p) == -1, "'%s' accepted", text);
}

static void test_percent(void)
{
    percent_ok("0.1%", 0.001);
    percent_ok("0.1", 0.001);
    percent_ok("5%", 0.05);
    percent_ok("100%", 1);
    percent_ok("0%", 0);
    percent_ok("0.001%", 0.00001);
    percent_bad("100.1%");
    percent_bad("101");
    percent_bad("-1%");
    percent_bad("5%%");
    percent_bad("5 %");
    percent_bad("%");
    percent_bad("half");
}

static void test_subnet(void)
{
    uint32_t net = 0;
    unsigned len = 0;
    CHECK(wan_parse_subnet("10.77.0.0/24", &net, &len) == 0 &&
              net == 0x0a4d0000 && len == 24,
          "10.77.0.0/24: %08x/%u", net, len);
    CHECK(wan_parse_subnet("192.168.8.0/30", &net, &len) == 0 && len == 30,
          "/30 rejected");
    const char *bad[] = {"10.77.0.1/24",  "10.77.0.0",  "10.77.0.0/7",
                         "10.77.0.0/31",  "10.77.0/24", "10.77.0.0/24x",
                         "10.77.0.0/2.4", "::1/64",     "10.77.0.0/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(wan_parse_subnet(bad[i], &net, &len) == -1, "'%s' accepted",
              bad[i]);
}

static void test_format(void)
{
    char out[32];
    wan_format_time(20000000, out, sizeof out);
    CHECK(strcmp(out, "20ms") == 0, "%s", out);
    wan_format_time(1500000, out, sizeof out);
    CHECK(strcmp(out, "1500us") == 0, "%s", out);
    wan_format_time(7, out, sizeof out);
    CHECK(strcmp(out, "7ns") == 0, "%s", out);
    wan_format_rate(1000000000, out, sizeof out);
    CHECK(strcmp(out, "1000Mbit") == 0, "%s", out);
    wan_format_rate(64000, out, sizeof out);
    CHECK(strcmp(out, "64kbit") == 0, "%s", out);
    wan_format_rate(0, out, sizeof out);
    CHECK(strcmp(out, "unlimited") == 0, "%s", out);
}

/* Parse a NULL-terminated argument list after "gridwan". */
static enum wan_options_result parse(struct wan_options *o, char *err,
                                     size_t err_len, ...)
{
    char *argv[32] = {"gridwan"};
    int argc = 1;
    va_list ap;
    va_start(ap, err_len);
    const char *arg;
    while ((arg = va_arg(ap, const char *)) != NULL)
        argv[argc++] = (char *)arg;
    va_end(ap);
    err[0] = '\0';
    return wan_options_parse(argc, argv, o, err, err_len);
}

static void test_command_line(void)
{
    struct wan_options o;
    char err[256];
    enum wan_options_result r =
        parse(&o, err, sizeof err, "--ns", "a,b", "--delay", "20ms", "--rate",
              "1gbit", "--loss", "0.1%", "--jitter", "1ms", "--mtu", "9000",
              "--seed", "42", "--duration", "3", "--rt-priority", "10", NULL);
    CHECK(r == WAN_OPTIONS_RUN, "rejected: %s", err);
    CHECK(o.site_count == 2 && strcmp(o.ns[0], "a") == 0 &&
              strcmp(o.ns[1], "b") == 0,
          "namespaces");
    CHECK(o.delay_ns == 20000000 && o.jitter_ns == 1000000 &&
              o.rate_bps == 1000000000 && fabs(o.loss - 0.001) < 1e-15 &&
              o.mtu == 9000 && o.seed == 42 && o.duration_ns == 3000000000 &&
              o.rt_priority == 10,
          "values");
    /* Default queue: one round-trip bandwidth-delay product. */
    CHECK(o.queue_bytes == 5000000, "queue %" PRIu64, o.queue_bytes);
    CHECK(wan_site_addr(&o, 0) == 0x0a4d0001 &&
              wan_site_addr(&o, 1) == 0x0a4d0002,
          "addresses");

    r = parse(&o, err, sizeof err, "--ns", "a,b", NULL);
    CHECK(r == WAN_OPTIONS_RUN && o.delay_ns == 0 && o.rate_bps == 0 &&
              o.loss == 0 && o.mtu == 1500 && o.seed == 1 &&
              o.duration_ns == 0 && o.rt_priority == 0 &&
              o.queue_bytes == 64u << 20 && o.subnet == 0x0a4d0000 &&
              o.prefix_len == 24,
          "defaults: %s", err);
    /* Low rate, short delay: the floor of 100 full frames. */
    r = parse(&o, err, sizeof err, "--ns", "a,b", "--rate", "10mbit", "--delay",
              "1ms", NULL);
    CHECK(r == WAN_OPTIONS_RUN && o.queue_bytes == 151400, "queue %" PRIu64,
          o.queue_bytes);
    r = parse(&o, err, sizeof err, "--ns", "a,b", "--rate", "100mbit",
              "--queue-ms", "50", NULL);
    CHECK(r == WAN_OPTIONS_RUN && o.queue_bytes == 625000, "queue-ms %" PRIu64,
          o.queue_bytes);
    r = parse(&o, err, sizeof err, "--ns", "a,b", "--queue", "256K", NULL);
    CHECK(r == WAN_OPTIONS_RUN && o.queue_bytes == 262144, "queue %" PRIu64,
          o.queue_bytes);
    r = parse(&o, err, sizeof err, "--ns", "s1,s2,s3", "--subnet",
              "192.168.5.0/30", NULL);
    CHECK(r == WAN_OPTIONS_ERROR && strstr(err, "--subnet") != NULL,
          "3 sites in a /30: %s", err);
    r = parse(&o, err, sizeof err, "--help", NULL);
    CHECK(r == WAN_OPTIONS_HELP, "--help");
}

/* Each case: the arguments, then the option the error must name. */
static void bad(const char *option, ...)
{
    char *argv[32] = {"gridwan"};
    int argc = 1;
    va_list ap;
    va_start(ap, option);
    const char *arg;
    while ((arg = va_arg(ap, const char *)) != NULL)
        argv[argc++] = (char *)arg;
    va_end(ap);
    struct wan_options o;
    char err[256] = "";
    enum wan_options_result r =
        wan_options_parse(argc, argv, &o, err, sizeof err);
    CHECK(r == WAN_OPTIONS_ERROR && strstr(err, option) != NULL &&
              strchr(err, '\n') == NULL,
          "%s %s: %s", argv[1], argc > 2 ? argv[2] : "", err);
}

static void test_errors(void)
{
    bad("--ns", "--delay", "1ms", NULL);
    bad("--ns", "--ns", "a", NULL);
    bad("--ns", "--ns", "a,a", NULL);
    bad("--ns", "--ns", "a,,b", NULL);
    bad("--ns", "--ns", "a,b/c", NULL);
    bad("--ns", "--ns", "a,.b", NULL);
    bad("--ns", "--ns", "a,bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", NULL);
    bad("--delay", "--ns", "a,b", "--delay", "20", NULL);
    bad("--delay", "--ns", "a,b", "--delay", "11s", NULL);
    bad("--delay", "--ns", "a,b", "--delay", NULL);
    bad("--jitter", "--ns", "a,b", "--jitter", "2ms", "--delay", "1ms", NULL);
    bad("--rate", "--ns", "a,b", "--rate", "100", NULL);
    bad("--rate", "--ns", "a,b", "--rate", "0gbit", NULL);
    bad("--rate", "--ns", "a,b", "--rate", "200gbit", NULL);
    bad("--loss", "--ns", "a,b", "--loss", "200%", NULL);
    bad("--loss", "--ns", "a,b", "--loss", "x", NULL);
    bad("--queue", "--ns", "a,b", "--queue", "12X", NULL);
    bad("--queue", "--ns", "a,b", "--queue", "1000", NULL);
    bad("--queue", "--ns", "a,b", "--queue", "2G", NULL);
    bad("--queue-ms", "--ns", "a,b", "--queue-ms", "50", NULL);
    bad("--queue-ms", "--ns", "a,b", "--rate", "1gbit", "--queue-ms", "50",
        "--queue", "1M", NULL);
    bad("--queue-ms", "--ns", "a,b", "--rate", "1mbit", "--queue-ms", "1",
        NULL);
    bad("--mtu", "--ns", "a,b", "--mtu", "50", NULL);
    bad("--mtu", "--ns", "a,b", "--mtu", "70000", NULL);
    bad("--mtu", "--ns", "a,b", "--mtu", "1500.5", NULL);
    bad("--subnet", "--ns", "a,b", "--subnet", "10.77.0.1/24", NULL);
    bad("--seed", "--ns", "a,b", "--seed", "-3", NULL);
    bad("--duration", "--ns", "a,b", "--duration", "0", NULL);
    bad("--duration", "--ns", "a,b", "--duration", "soon", NULL);
    bad("--rt-priority", "--ns", "a,b", "--rt-priority", "0", NULL);
    bad("--rt-priority", "--ns", "a,b", "--rt-priority", "100", NULL);
    bad("--frobnicate", "--ns", "a,b", "--frobnicate", NULL);
    bad("extra", "--ns", "a,b", "extra", NULL);
}

int main(void)
{
    test_times();
    test_rates();
    test_percent();
    test_subnet();
    test_format();
    test_command_line();
    test_errors();
    return unit_check_report("");
}
