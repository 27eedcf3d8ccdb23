/* gridwan's command line: options, units and defaults (docs/gridwan.md). */
#ifndef WAN_OPTIONS_H
#define WAN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WAN_MAX_SITES   32
#define WAN_NS_NAME_MAX 32 /* with the terminating NUL */
/* Ethernet header in front of every frame: rate, queue and MTU checks
 * count it. */
#define WAN_ETH_HLEN 14u

struct wan_options {
    unsigned site_count;
    char ns[WAN_MAX_SITES][WAN_NS_NAME_MAX];
    uint64_t delay_ns;
    uint64_t jitter_ns;
    uint64_t rate_bps; /* 0: no rate limit */
    double loss;       /* probability */
    /* Effective queue: --queue, --queue-ms at --rate, or the default. */
    uint64_t queue_bytes;
    uint32_t mtu;
    uint32_t subnet; /* host byte order */
    unsigned prefix_len;
    uint64_t seed;
    uint64_t duration_ns; /* 0: until SIGINT or SIGTERM */
    unsigned rt_priority; /* SCHED_FIFO priority; 0: fair scheduling */
};

enum wan_options_result {
    WAN_OPTIONS_RUN,
    WAN_OPTIONS_HELP,
    WAN_OPTIONS_ERROR,
};

/* Fills `o`; on WAN_OPTIONS_ERROR `err` holds one line naming the option. */
enum wan_options_result wan_options_parse(int argc, char **argv,
                                          struct wan_options *o, char *err,
                                          size_t err_len);
void wan_options_usage(FILE *out);

/*
 * Units.  Numbers are decimal with up to 9 digits after the point; units
 * are case-insensitive.  Each returns 0, or -1 when the text is malformed,
 * has an unknown unit or does not fit.
 *
 * Times: ns, us, ms, s.  A bare number is taken in `bare_unit_ns`, or
 * rejected when that is 0.
 */
int wan_parse_time(const char *text, uint64_t bare_unit_ns, uint64_t *ns);
/* Rates: bit, kbit, mbit, gbit (powers of 1000), in bit/s. */
int wan_parse_rate(const char *text, uint64_t *bps);
/* "0.1%" or "0.1" (percent either way, as tc does), 0..100. */
int wan_parse_percent(const char *text, double *probability);
/* "a.b.c.d/len", len 8..30, no host bits set. */
int wan_parse_subnet(const char *text, uint32_t *net, unsigned *prefix_len);

/* Site i's address, host byte order: the subnet's (i + 1)-th address. */
uint32_t wan_site_addr(const struct wan_options *o, unsigned site);

/* Inverse of the parsers, exact: "20ms", "1500us", "1000Mbit". */
void wan_format_time(uint64_t ns, char *out, size_t len);
void wan_format_rate(uint64_t bps, char *out, size_t len);

#endif
