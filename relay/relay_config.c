/*
 * gridrelay configuration.  The key table below is the only place a key is
 * declared: defaults, loading, validation and the --help reference all walk
 * it, so they cannot disagree with each other.
 */
#include "relay_config.h"

#include "gc_proto.h"
#include "gc_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum key_type { KEY_STRING, KEY_INT, KEY_BOOL, KEY_SIZE, KEY_ENUM };

enum key_flag {
    KF_REQUIRED = 1u << 0,
    KF_PEER = 1u << 1,       /* offset is into struct relay_peer_config */
    KF_PATH = 1u << 2,       /* relative to the config file's directory */
    KF_HOSTPORT = 1u << 3,   /* "host:port", checked with gc_endpoint_parse */
    KF_UNIX = 1u << 4,       /* absolute Unix socket path */
    KF_NAME = 1u << 5,       /* site name: [a-zA-Z0-9_-]{1,63} */
    KF_CONGESTION = 1u << 6, /* listed by the kernel as available */
    KF_ENUM_INT = 1u << 7,   /* enum stored as its value, not as its word */
    KF_JOB = 1u << 8,        /* describes one job: not in a service config */
    KF_SERVICE = 1u << 9,    /* service mode only (the `service` group) */
    KF_RELOAD = 1u << 10,    /* SIGHUP applies a new value (relay_reload) */
};

struct enum_word {
    const char *word;
    int value;
};

struct key_spec {
    const char *name; /* dotted path; peer keys are "peers.<key>" */
    enum key_type type;
    unsigned flags;
    size_t offset;
    size_t size;
    int64_t def;                   /* KEY_INT, KEY_SIZE, KEY_BOOL */
    const char *def_str;           /* KEY_STRING, KEY_ENUM */
    int64_t min, max;              /* KEY_INT, KEY_SIZE */
    const struct enum_word *words; /* KEY_ENUM, ends with a NULL word */
    const char *doc;
};

#define CFG_FIELD(m)                                                           \
    .offset = offsetof(struct relay_config, m),                                \
    .size = sizeof(((struct relay_config *)0)->m)
#define PEER_FIELD(m)                                                          \
    .offset = offsetof(struct relay_peer_config, m),                           \
    .size = sizeof(((struct relay_peer_config *)0)->m)

#define KIB(n) ((int64_t)(n) << 10)
#define MIB(n) ((int64_t)(n) << 20)
#define GIB(n) ((int64_t)(n) << 30)

/* KF_ENUM_INT stores the value through an int. */
_Static_assert(sizeof(enum relay_connect_mode) == sizeof(int),
               "connect mode is stored as an int");

static const struct enum_word log_levels[] = {
    {"error", 0}, {"warn", 1}, {"info", 2}, {"debug", 3}, {NULL, 0}};

static const struct enum_word connect_modes[] = {
    {"auto", RELAY_CONNECT_AUTO},
    {"dial", RELAY_CONNECT_DIAL},
    {"listen", RELAY_CONNECT_LISTEN},
    {NULL, 0}};

static const struct key_spec keys[] = {
    /* identity */
    {.name = "site",
     .type = KEY_STRING,
     .flags = KF_REQUIRED | KF_NAME,
     CFG_FIELD(site_name),
     .def_str = "",
     .doc = "Name of this site, announced to peer relays and matched "
            "against their peers.name; letters, digits, '_' and '-', at "
            "most 63 characters."},
    {.name = "job_id",
     .type = KEY_INT,
     .flags = KF_JOB,
     CFG_FIELD(job_id),
     .def = 0,
     .min = 0,
     .max = UINT32_MAX,
     .doc = "Job identifier carried in every frame; all relays and ranks "
            "of one job must use the same value."},
    {.name = "first_rank",
     .type = KEY_INT,
     .flags = KF_JOB,
     CFG_FIELD(first_rank),
     .def = 0,
     .min = 0,
     .max = GC_MAX_RANK,
     .doc = "First grid rank hosted by this site."},
    {.name = "rank_count",
     .type = KEY_INT,
     .flags = KF_REQUIRED | KF_JOB,
     CFG_FIELD(rank_count),
     .min = 1,
     .max = (int64_t)GC_MAX_RANK + 1,
     .doc = "Number of grid ranks hosted by this site; first_rank + "
            "rank_count - 1 may not exceed 16777215."},
    {.name = "token_file",
     .type = KEY_STRING,
     .flags = KF_REQUIRED | KF_PATH | KF_JOB,
     CFG_FIELD(token_file),
     .def_str = "",
     .doc = "File holding the job token (trailing whitespace ignored) that "
            "local ranks and peer relays must prove they know."},

    /* endpoints */
    {.name = "local.unix",
     .type = KEY_STRING,
     .flags = KF_UNIX,
     CFG_FIELD(local_unix),
     .def_str = "",
     .doc = "Absolute path (optionally written unix:/path) of the Unix "
            "socket local ranks connect to; \"\" disables it.  At least one of "
            "local.unix and local.tcp must "
            "be set."},
    {.name = "local.tcp",
     .type = KEY_STRING,
     .flags = KF_HOSTPORT,
     CFG_FIELD(local_tcp),
     .def_str = "",
     .doc = "host:port local ranks connect to over TCP; \"\" disables it."},
    {.name = "wan.listen",
     .type = KEY_STRING,
     .flags = KF_HOSTPORT,
     CFG_FIELD(wan_listen),
     .def_str = "",
     .doc = "host:port peer relays dial; \"\" accepts no incoming streams.  "
            "Required when some peer's connect mode resolves to listen."},
    {.name = "wan.streams",
     .type = KEY_INT,
     CFG_FIELD(streams),
     .def = 8,
     .min = 1,
     .max = 64,
     .doc = "Parallel TCP streams per peer link."},
    {.name = "wan.chunk_size",
     .type = KEY_SIZE,
     CFG_FIELD(chunk_size),
     .def = KIB(256),
     .min = KIB(4),
     .max = GC_MAX_PAYLOAD,
     .doc = "Messages larger than this are cut into chunks of this size and "
            "spread over the link's streams."},
    {.name = "wan.redundant_bytes",
     .type = KEY_SIZE,
     CFG_FIELD(redundant_bytes),
     .def = MIB(1),
     .min = 0,
     .max = GIB(1),
     .doc = "On a link whose TCP streams retransmitted in the last minute: "
            "while its unacknowledged bytes, the new chunk included, stay "
            "within this size, each chunk of a message of at least "
            "wan.redundant_min_message, or of at most 1 KiB, is sent on two "
            "streams and the peer keeps whichever copy comes first, so a "
            "segment the network loses rarely costs a burst a round trip, "
            "or a lone small message a retransmission timeout.  Bulk "
            "transfers, which keep more than this in flight, go once.  0 "
            "sends every chunk once."},
    {.name = "wan.redundant_min_message",
     .type = KEY_SIZE,
     CFG_FIELD(redundant_min_message),
     .def = KIB(128),
     .min = 0,
     .max = GIB(4),
     .doc = "Smallest message above 1 KiB whose chunks "
            "wan.redundant_bytes copies: a smaller one is seldom hit by a "
            "loss, and its copies would slow the streams' paced bursts more "
            "than they save."},
    {.name = "wan.plaintext",
     .type = KEY_BOOL,
     CFG_FIELD(wan_plaintext),
     .def = 0,
     .doc = "Run WAN streams without TLS: data and the token handshake "
            "cross the network unencrypted.  For loopback tests only."},

    /* TLS */
    {.name = "tls.cert",
     .type = KEY_STRING,
     .flags = KF_RELOAD | KF_PATH,
     CFG_FIELD(tls_cert),
     .def_str = "",
     .doc = "PEM certificate (chain) this relay presents to its peers.  "
            "Required unless wan.plaintext is true."},
    {.name = "tls.key",
     .type = KEY_STRING,
     .flags = KF_RELOAD | KF_PATH,
     CFG_FIELD(tls_key),
     .def_str = "",
     .doc = "PEM private key of tls.cert.  Required unless wan.plaintext is "
            "true."},
    {.name = "tls.ca",
     .type = KEY_STRING,
     .flags = KF_RELOAD | KF_PATH,
     CFG_FIELD(tls_ca),
     .def_str = "",
     .doc = "PEM CA certificates peer certificates must chain to (both "
            "sides authenticate).  Required unless wan.plaintext is true."},

    /* socket options */
    {.name = "tcp.congestion",
     .type = KEY_STRING,
     .flags = KF_CONGESTION,
     CFG_FIELD(tcp_congestion),
     .def_str = "",
     .doc = "TCP congestion control for WAN streams (e.g. bbr, cubic); must "
            "be listed in /proc/sys/net/ipv4/"
            "tcp_available_congestion_control.  \"\" keeps the system "
            "default."},
    {.name = "tcp.sndbuf",
     .type = KEY_SIZE,
     CFG_FIELD(tcp_sndbuf),
     .def = 0,
     .min = 0,
     .max = GIB(1),
     .doc = "SO_SNDBUF of WAN streams; 0 keeps the kernel's autotuning."},
    {.name = "tcp.rcvbuf",
     .type = KEY_SIZE,
     CFG_FIELD(tcp_rcvbuf),
     .def = 0,
     .min = 0,
     .max = GIB(1),
     .doc = "SO_RCVBUF of WAN streams; 0 keeps the kernel's autotuning."},
    {.name = "tcp.nodelay",
     .type = KEY_BOOL,
     CFG_FIELD(tcp_nodelay),
     .def = 1,
     .doc = "Set TCP_NODELAY on WAN streams so small frames (ACK, CREDIT, "
            "PING) are not held back by Nagle's algorithm."},
    {.name = "tcp.restart_after_idle",
     .type = KEY_BOOL,
     CFG_FIELD(tcp_restart_after_idle),
     .def = 1,
     .doc = "Before a bbr WAN stream with nothing in flight but a few "
            "control frames (at most 1 KiB unsent or unacknowledged) sends "
            "again, "
            "re-initialise its congestion control, so the burst starts "
            "from bbr's STARTUP paced after the congestion window, not "
            "after a bandwidth estimate that the small frames between "
            "bursts wore down (for bbr what net.ipv4."
            "tcp_slow_start_after_idle = 0 is for cubic)."},
    {.name = "tcp.keepalive",
     .type = KEY_BOOL,
     CFG_FIELD(tcp_keepalive),
     .def = 1,
     .doc = "Enable TCP keepalive on WAN streams so middleboxes keep idle "
            "connections open."},
    {.name = "tcp.keepalive_idle",
     .type = KEY_INT,
     CFG_FIELD(tcp_keepalive_idle_s),
     .def = 30,
     .min = 1,
     .max = 7200,
     .doc = "Seconds of idleness before the first keepalive probe."},
    {.name = "tcp.notsent_lowat",
     .type = KEY_SIZE,
     CFG_FIELD(tcp_notsent_lowat),
     .def = 0,
     .min = 0,
     .max = GIB(1),
     .doc = "TCP_NOTSENT_LOWAT of WAN streams: bytes a stream's socket may "
            "hold not yet sent; more stay in the relay, where the link's "
            "scheduler can still put another job's (or a small) message "
            "first.  Bytes in flight are not limited.  0 leaves the kernel "
            "its whole send buffer (several MB queued ahead of everything "
            "on a busy link), which moves the most bytes per system call: "
            "the default of a per-job relay; a service's default is 256K."},

    /* flow control */
    {.name = "flow.rank_credit",
     .type = KEY_SIZE,
     CFG_FIELD(rank_credit),
     /* A rank pair's credit comes back a WAN round trip after the data
      * arrived, later still when a loss holds the in-order delivery: at
      * 8M one pair got 575 Mbit/s over a 1 Gbit/s, 20 ms, 0.1 % loss link,
      * at 32M 795 (docs/performance/history.md, the WAN report). */
     .def = MIB(32),
     .min = KIB(64),
     .max = GIB(1),
     .doc = "Bytes one source rank may have in flight towards one "
            "destination rank before the receiving side grants more "
            "credit."},
    {.name = "flow.link_window",
     .type = KEY_SIZE,
     CFG_FIELD(link_window),
     .def = MIB(64),
     .min = MIB(1),
     .max = GIB(4),
     .doc = "Unacknowledged bytes kept per link for re-sending after a "
            "stream breaks; sending on the link pauses when it is full."},
    {.name = "flow.session_high_watermark",
     .type = KEY_SIZE,
     CFG_FIELD(session_high_watermark),
     .def = MIB(16),
     .min = KIB(64),
     .max = GIB(4),
     .doc = "Bytes queued towards one local rank at which the relay stops "
            "reading from the links that feed it."},
    {.name = "flow.session_low_watermark",
     .type = KEY_SIZE,
     CFG_FIELD(session_low_watermark),
     .def = MIB(4),
     .min = KIB(64),
     .max = GIB(4),
     .doc = "Queue depth at which reading resumes; may not exceed "
            "flow.session_high_watermark."},
    {.name = "flow.link_high_watermark",
     .type = KEY_SIZE,
     CFG_FIELD(link_high_watermark),
     .def = MIB(32),
     .min = KIB(64),
     .max = GIB(4),
     .doc = "Bytes one job may queue for one link (waiting for the link's "
            "scheduler to give them a stream) before the relay stops "
            "reading from the job's local ranks that feed it."},
    {.name = "flow.link_low_watermark",
     .type = KEY_SIZE,
     CFG_FIELD(link_low_watermark),
     .def = MIB(8),
     .min = KIB(64),
     .max = GIB(4),
     .doc = "Queue depth at which reading resumes; may not exceed "
            "flow.link_high_watermark."},
    {.name = "flow.ack_interval_ms",
     .type = KEY_INT,
     CFG_FIELD(ack_interval_ms),
     .def = 5,
     .min = 1,
     .max = 1000,
     .doc = "Longest delay before the receiving relay sends a cumulative "
            "ACK."},

    /* liveness */
    {.name = "liveness.ping_interval_ms",
     .type = KEY_INT,
     CFG_FIELD(ping_interval_ms),
     .def = 1000,
     .min = 50,
     .max = 60000,
     .doc = "Interval between PINGs on each WAN stream (liveness and RTT)."},
    {.name = "liveness.stream_timeout_ms",
     .type = KEY_INT,
     CFG_FIELD(stream_timeout_ms),
     .def = 10000,
     .min = 200,
     .max = 600000,
     .doc = "A stream that receives nothing for this long is declared dead "
            "and re-established; must exceed liveness.ping_interval_ms."},
    {.name = "liveness.reconnect_min_ms",
     .type = KEY_INT,
     CFG_FIELD(reconnect_min_ms),
     .def = 100,
     .min = 10,
     .max = 60000,
     .doc = "First re-dial delay after a stream breaks; the backoff grows "
            "from here."},
    {.name = "liveness.reconnect_max_ms",
     .type = KEY_INT,
     CFG_FIELD(reconnect_max_ms),
     .def = 5000,
     .min = 10,
     .max = 600000,
     .doc = "Re-dial backoff ceiling; may not be below "
            "liveness.reconnect_min_ms."},
    {.name = "liveness.peer_give_up_ms",
     .type = KEY_INT,
     CFG_FIELD(peer_give_up_ms),
     .def = 30000,
     .min = 100,
     .max = 3600000,
     .doc = "A link without any working stream for this long is given up: "
            "traffic to the peer's ranks fails with PEER_UNREACHABLE."},

    /* operations */
    {.name = "http.listen",
     .type = KEY_STRING,
     .flags = KF_HOSTPORT | KF_UNIX,
     CFG_FIELD(http_listen),
     .def_str = "",
     .doc = "Where /metrics and /status are served: host:port, or "
            "unix:/path for the operator (a service shows every job there, "
            "and only aggregate figures on host:port, as anyone who "
            "reaches the port may read it); \"\" disables it."},
    {.name = "http.admin",
     .type = KEY_BOOL,
     CFG_FIELD(admin_enabled),
     .def = 0,
     .doc = "Allow POST /admin/break-stream (fault injection for tests)."},
    {.name = "log.level",
     .type = KEY_ENUM,
     .flags = KF_RELOAD,
     CFG_FIELD(log_level),
     .def_str = "info",
     .words = log_levels,
     .doc = "Least severe level written to the log."},
    {.name = "log.file",
     .type = KEY_STRING,
     .flags = KF_RELOAD | KF_PATH,
     CFG_FIELD(log_file),
     .def_str = "",
     .doc = "File log lines are appended to, reopened on SIGHUP; \"\" logs "
            "to stderr."},

    /* service mode */
    {.name = "service.control",
     .type = KEY_STRING,
     .flags = KF_SERVICE | KF_REQUIRED | KF_HOSTPORT | KF_UNIX,
     CFG_FIELD(service_control),
     .def_str = "",
     .doc = "Where launchers register jobs: host:port, or unix:/path for "
            "launchers on the gateway itself.  HTTPS either way, with this "
            "relay's tls.cert and a client certificate from "
            "service.client_ca.  A `service` group makes the relay a "
            "service: no job in this file, jobs come and go at run time."},
    {.name = "service.client_ca",
     .type = KEY_STRING,
     .flags = KF_RELOAD | KF_SERVICE | KF_REQUIRED | KF_PATH,
     CFG_FIELD(service_client_ca),
     .def_str = "",
     .doc = "PEM CA certificates that launchers' client certificates must "
            "chain to; the certificate's common name is the job's owner."},
    {.name = "service.lease",
     .type = KEY_INT,
     .flags = KF_RELOAD | KF_SERVICE,
     CFG_FIELD(service_lease_s),
     .def = 30,
     .min = 2,
     .max = 86400,
     .doc = "Seconds: a job whose launcher neither renewed nor removed it "
            "for this long is ended (its launcher vanished).  Launchers may "
            "ask for less."},
    {.name = "service.max_jobs",
     .type = KEY_INT,
     .flags = KF_RELOAD | KF_SERVICE,
     CFG_FIELD(service_max_jobs),
     .def = 64,
     .min = 1,
     .max = 4096,
     .doc = "Jobs registered at once; more are refused (HTTP 503)."},
    {.name = "service.job_memory",
     .type = KEY_SIZE,
     .flags = KF_RELOAD | KF_SERVICE,
     CFG_FIELD(service_job_memory),
     .def = MIB(256),
     .min = MIB(1),
     .max = GIB(64),
     .doc = "Bytes of one job this relay holds for its ranks from each "
            "peer site; the peers stop sending the job's data beyond it, "
            "so no job can exhaust the gateway's memory for the others."},
    {.name = "service.owner_jobs",
     .type = KEY_INT,
     .flags = KF_RELOAD | KF_SERVICE,
     CFG_FIELD(service_owner_jobs),
     .def = 16,
     .min = 1,
     .max = 4096,
     .doc = "Jobs one owner (launcher certificate name) may have registered "
            "at once; more are refused (HTTP 429), so one user cannot take "
            "every slot of service.max_jobs."},
    {.name = "service.max_ranks",
     .type = KEY_INT,
     .flags = KF_RELOAD | KF_SERVICE,
     CFG_FIELD(service_max_ranks),
     .def = 65536,
     .min = 1,
     .max = 16777216,
     .doc = "Ranks one job may have over all its sites; a registration "
            "asking for more is refused (HTTP 400).  The relay's memory "
            "for a job grows with its ranks."},
    {.name = "service.owner_ranks",
     .type = KEY_INT,
     .flags = KF_RELOAD | KF_SERVICE,
     CFG_FIELD(service_owner_ranks),
     .def = 65536,
     .min = 1,
     .max = 16777216,
     .doc = "This site's ranks of one owner's jobs together; more are "
            "refused (HTTP 429)."},
    {.name = "service.admins",
     .type = KEY_STRING,
     .flags = KF_RELOAD | KF_SERVICE,
     CFG_FIELD(service_admins),
     .def_str = "",
     .doc = "Comma-separated certificate names (from service.client_ca) of "
            "the site's operators: on the control endpoint they see every "
            "job in GET /jobs, /status and /metrics and may DELETE any "
            "job.  Everyone else sees only their own jobs."},
    {.name = "limits.handshakes",
     .type = KEY_INT,
     .flags = KF_RELOAD,
     CFG_FIELD(max_handshakes),
     .def = 256,
     .min = 1,
     .max = 65536,
     .doc = "Connections (rank sessions and WAN streams) that may be in "
            "their handshake at once; newer ones are closed at accept, so "
            "strangers cannot use up the relay's descriptors."},
    {.name = "limits.http_connections",
     .type = KEY_INT,
     .flags = KF_RELOAD,
     CFG_FIELD(http_max_connections),
     .def = 64,
     .min = 1,
     .max = 65536,
     .doc = "Open connections each HTTP endpoint (http.listen, "
            "service.control) keeps; newer ones are closed at accept.  "
            "Idle ones are closed after 10 s."},

    /* one group per entry of the `peers` list */
    {.name = "peers.name",
     .type = KEY_STRING,
     .flags = KF_PEER | KF_REQUIRED | KF_NAME,
     PEER_FIELD(name),
     .def_str = "",
     .doc = "The peer's site name (its `site` key); unique, and not our "
            "own."},
    {.name = "peers.first_rank",
     .type = KEY_INT,
     .flags = KF_PEER | KF_REQUIRED | KF_JOB,
     PEER_FIELD(first_rank),
     .min = 0,
     .max = GC_MAX_RANK,
     .doc = "First grid rank hosted by the peer."},
    {.name = "peers.rank_count",
     .type = KEY_INT,
     .flags = KF_PEER | KF_REQUIRED | KF_JOB,
     PEER_FIELD(rank_count),
     .min = 1,
     .max = (int64_t)GC_MAX_RANK + 1,
     .doc = "Number of grid ranks hosted by the peer; no two sites' rank "
            "ranges may overlap."},
    {.name = "peers.address",
     .type = KEY_STRING,
     .flags = KF_RELOAD | KF_PEER | KF_HOSTPORT,
     PEER_FIELD(address),
     .def_str = "",
     .doc = "host:port of the peer's wan.listen; required when we dial."},
    {.name = "peers.connect",
     .type = KEY_ENUM,
     .flags = KF_PEER | KF_ENUM_INT,
     PEER_FIELD(connect),
     .def_str = "auto",
     .words = connect_modes,
     .doc = "Who opens the streams: dial (we do), listen (the peer does) or "
            "auto (the site whose name sorts first in strcmp order "
            "dials)."},
};

#define KEY_COUNT (sizeof keys / sizeof keys[0])

/* Where a key was set; line 0 means not set. */
struct slot {
    const char *file;
    int line;
    bool bad; /* set but rejected: later checks stay quiet about it */
};

struct loader {
    FILE *errors;
    const char *path; /* as the caller spelled it, for messages */
    char dir[RELAY_PATH_MAX];
    int error_count;
    struct relay_config *cfg;
    struct slot global[KEY_COUNT];
    struct slot peer[RELAY_MAX_PEERS][KEY_COUNT];
    struct slot peer_group[RELAY_MAX_PEERS];
    struct slot local_group;
    struct slot service_group;
};

static void report(struct loader *ld, const struct slot *at, const char *fmt,
                   ...) __attribute__((format(printf, 3, 4)));

static void report(struct loader *ld, const struct slot *at, const char *fmt,
                   ...)
{
    ld->error_count++;
    if (ld->errors == NULL)
        return;
    if (at != NULL && at->line > 0)
        fprintf(ld->errors, "%s:%d: ", at->file, at->line);
    else
        fprintf(ld->errors, "%s: ", ld->path);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(ld->errors, fmt, ap);
    va_end(ap);
    fputc('\n', ld->errors);
}

static struct slot slot_of(const struct loader *ld, const config_setting_t *s)
{
    const char *file = config_setting_source_file(s);
    struct slot at = {.file = file != NULL ? file : ld->path,
                      .line = (int)config_setting_source_line(s)};
    return at;
}

static const char *type_phrase(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP: return "a group";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a float";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array";
    case CONFIG_TYPE_LIST: return "a list";
    default: return "nothing";
    }
}

static const char *expected_phrase(enum key_type type)
{
    switch (type) {
    case KEY_STRING:
    case KEY_ENUM: return "a string";
    case KEY_INT: return "an integer";
    case KEY_BOOL: return "a boolean (true or false)";
    case KEY_SIZE: return "a size (integer or string like \"256K\")";
    }
    return "?";
}

/* "256K" rather than 262144 wherever sizes are shown to people. */
static const char *format_size(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "GMK";
    for (int i = 0; i < 3; i++) {
        uint64_t scale = 1ull << (10 * (3 - i));
        if (v != 0 && v % scale == 0) {
            snprintf(buf, len, "%" PRIu64 "%c", v / scale, units[i]);
            return buf;
        }
    }
    snprintf(buf, len, "%" PRIu64, v);
    return buf;
}

static const char *format_value(const struct key_spec *k, int64_t v, char *buf,
                                size_t len)
{
    if (k->type == KEY_SIZE)
        return format_size((uint64_t)v, buf, len);
    snprintf(buf, len, "%" PRId64, v);
    return buf;
}

static void *field_of(void *base, const struct key_spec *k)
{
    return (char *)base + k->offset;
}

static void store_number(void *base, const struct key_spec *k, uint64_t v)
{
    if (k->size == sizeof(uint32_t)) {
        uint32_t v32 = (uint32_t)v;
        memcpy(field_of(base, k), &v32, sizeof v32);
    } else {
        memcpy(field_of(base, k), &v, sizeof v);
    }
}

static void store_bool(void *base, const struct key_spec *k, int v)
{
    memcpy(field_of(base, k), &v, sizeof v);
}

static void store_word(void *base, const struct key_spec *k,
                       const struct enum_word *w)
{
    if (k->flags & KF_ENUM_INT)
        memcpy(field_of(base, k), &w->value, sizeof w->value);
    else
        snprintf(field_of(base, k), k->size, "%s", w->word);
}

static const struct enum_word *find_word(const struct key_spec *k,
                                         const char *word)
{
    for (const struct enum_word *w = k->words; w->word != NULL; w++)
        if (strcmp(w->word, word) == 0)
            return w;
    return NULL;
}

/* Apply the defaults of the global keys (scope 0) or of one peer entry. */
static void apply_defaults(void *base, unsigned scope)
{
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key_spec *k = &keys[i];
        if ((k->flags & KF_PEER) != scope)
            continue;
        switch (k->type) {
        case KEY_INT:
        case KEY_SIZE: store_number(base, k, (uint64_t)k->def); break;
        case KEY_BOOL: store_bool(base, k, (int)k->def); break;
        case KEY_STRING:
            snprintf(field_of(base, k), k->size, "%s", k->def_str);
            break;
        case KEY_ENUM: store_word(base, k, find_word(k, k->def_str)); break;
        }
    }
}

void relay_config_defaults(struct relay_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    apply_defaults(cfg, 0);
}

enum relay_connect_mode
relay_config_peer_mode(const struct relay_config *cfg,
                       const struct relay_peer_config *peer)
{
    if (peer->connect != RELAY_CONNECT_AUTO)
        return peer->connect;
    return strcmp(cfg->site_name, peer->name) < 0 ? RELAY_CONNECT_DIAL
                                                  : RELAY_CONNECT_LISTEN;
}

static const struct key_spec *find_key(const char *name, unsigned scope)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if ((keys[i].flags & KF_PEER) == scope &&
            strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

/* True when `name` is a group some key of `scope` lives in. */
static bool is_known_group(const char *name, unsigned scope)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < KEY_COUNT; i++)
        if ((keys[i].flags & KF_PEER) == scope &&
            strncmp(keys[i].name, name, len) == 0 && keys[i].name[len] == '.')
            return true;
    return false;
}

static bool is_name_char(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '*';
}

/*
 * libconfig 1.5 converts plain integer literals with atoi(), so 4294967296
 * silently becomes 0 and 4294967295 becomes -1 (only an L suffix gives a
 * 64-bit value).  Re-read the literal on the setting's line so job_id up to
 * 2^32-1 and byte counts above 2G mean what they say.  Returns 1 with *out
 * set, 0 when the literal cannot be found there, -1 when it does not even
 * fit a long long.
 */
static int reread_literal(const config_setting_t *s, long long *out)
{
    int status = 0;
    const char *file = config_setting_source_file(s);
    const char *name = config_setting_name(s);
    unsigned line = config_setting_source_line(s);
    FILE *f = NULL;
    char *text = NULL;
    size_t cap = 0;

    if (file == NULL || name == NULL || line == 0)
        goto cleanup;
    f = fopen(file, "r");
    if (f == NULL)
        goto cleanup;
    for (unsigned n = 0; n < line; n++)
        if (getline(&text, &cap, f) < 0)
            goto cleanup;
    size_t len = strlen(name);
    for (const char *p = strstr(text, name); p != NULL;
         p = strstr(p + 1, name)) {
        if ((p > text && is_name_char((unsigned char)p[-1])) ||
            is_name_char((unsigned char)p[len]))
            continue;
        const char *q = p + len;
        q += strspn(q, " \t");
        if (*q != '=' && *q != ':')
            continue;
        q++;
        q += strspn(q, " \t");
        const char *digits = q + (*q == '-' || *q == '+');
        int base = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')
                       ? 16
                       : 10;
        if (!isdigit((unsigned char)digits[0]))
            continue;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(q, &end, base);
        if (errno == ERANGE) {
            status = -1;
            goto cleanup;
        }
        *out = v;
        status = 1;
        goto cleanup;
    }
cleanup:
    free(text);
    if (f != NULL)
        fclose(f);
    return status;
}

/* 0 with the integer in *out, -1 when the literal is beyond long long. */
static int setting_integer(const config_setting_t *s, long long *out)
{
    if (config_setting_type(s) == CONFIG_TYPE_INT64) {
        *out = config_setting_get_int64(s);
        return 0;
    }
    int parsed = config_setting_get_int(s);
    long long literal = 0;
    int found = reread_literal(s, &literal);
    if (found < 0)
        return -1;
    /* Only trust the re-read text when libconfig saw the same low bits. */
    if (found == 1 && (uint32_t)literal == (uint32_t)parsed)
        *out = literal;
    else
        *out = parsed;
    return 0;
}

static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RELAY_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

/*
 * An unreadable list means we cannot know what the kernel offers; the
 * setsockopt at run time will then be the judge.
 */
static bool congestion_available(const char *name, char *list, size_t len)
{
    bool found = true;
    list[0] = '\0';
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");
    if (f == NULL)
        return true;
    if (fgets(list, (int)len, f) != NULL) {
        list[strcspn(list, "\n")] = '\0';
        found = false;
        char copy[512];
        snprintf(copy, sizeof copy, "%s", list);
        char *save = NULL;
        for (char *w = strtok_r(copy, " \t", &save); w != NULL;
             w = strtok_r(NULL, " \t", &save))
            if (strcmp(w, name) == 0)
                found = true;
    }
    fclose(f);
    return found;
}

/* Validate and store one string value; false when it was rejected. */
static bool store_string(struct loader *ld, const struct key_spec *k,
                         const struct slot *at, const char *shown,
                         const char *value, void *base)
{
    char buf[RELAY_PATH_MAX];
    int n = snprintf(buf, sizeof buf, "%s", value);
    if ((k->flags & KF_PATH) && value[0] != '\0' && value[0] != '/')
        n = snprintf(buf, sizeof buf, "%s/%s", ld->dir, value);
    if (n < 0 || (size_t)n >= k->size) {
        report(ld, at, "%s: too long (at most %zu bytes)", shown, k->size - 1);
        return false;
    }
    if ((k->flags & KF_NAME) && !valid_name(buf)) {
        report(ld, at,
               "%s: '%s' is not a valid site name (1 to 63 letters, digits, "
               "'_' or '-')",
               shown, buf);
        return false;
    }
    if (buf[0] != '\0' && (k->flags & (KF_HOSTPORT | KF_UNIX))) {
        struct gc_endpoint ep;
        char err[300];
        bool either = (k->flags & KF_HOSTPORT) && (k->flags & KF_UNIX);
        bool looks_unix = buf[0] == '/' || strncmp(buf, "unix:", 5) == 0;
        /* gc_endpoint_parse would take a relative name for host:port. */
        if ((k->flags & KF_UNIX) && (!either || looks_unix) && buf[0] != '/' &&
            strncmp(buf, "unix:/", 6) != 0) {
            report(ld, at, "%s: '%s' is not an absolute path", shown, buf);
            return false;
        }
        if (gc_endpoint_parse(buf, &ep, err, sizeof err) != 0) {
            report(ld, at, "%s: %s", shown, err);
            return false;
        }
        if ((k->flags & KF_HOSTPORT) && !either && ep.family == AF_UNIX) {
            report(ld, at, "%s: '%s' is a Unix socket path; want host:port",
                   shown, buf);
            return false;
        }
    }
    if (buf[0] != '\0' && (k->flags & KF_CONGESTION)) {
        char list[512];
        if (!congestion_available(buf, list, sizeof list)) {
            report(ld, at,
                   "%s: congestion control '%s' is not available "
                   "(available: %s)",
                   shown, buf, list);
            return false;
        }
    }
    memcpy(field_of(base, k), buf, (size_t)n + 1);
    return true;
}

static bool store_enum(struct loader *ld, const struct key_spec *k,
                       const struct slot *at, const char *shown,
                       const char *value, void *base)
{
    const struct enum_word *w = find_word(k, value);
    if (w == NULL) {
        char words[128] = "";
        size_t used = 0;
        for (const struct enum_word *e = k->words; e->word != NULL; e++)
            used += (size_t)snprintf(words + used, sizeof words - used, "%s%s",
                                     used > 0 ? ", " : "", e->word);
        report(ld, at, "%s: unknown value '%s' (want one of: %s)", shown, value,
               words);
        return false;
    }
    store_word(base, k, w);
    return true;
}

static bool store_integer(struct loader *ld, const struct key_spec *k,
                          const struct slot *at, const char *shown,
                          const config_setting_t *s, void *base)
{
    char lo[32], hi[32], val[32];
    long long v = 0;
    if (k->type == KEY_SIZE && config_setting_type(s) == CONFIG_TYPE_STRING) {
        const char *text = config_setting_get_string(s);
        uint64_t u = 0;
        if (gc_parse_size(text, &u) != 0) {
            report(ld, at,
                   "%s: bad size '%s' (want a number with an optional K, M "
                   "or G suffix)",
                   shown, text);
            return false;
        }
        if (u > (uint64_t)k->max) {
            report(ld, at, "%s: %s is out of range %s..%s", shown, text,
                   format_value(k, k->min, lo, sizeof lo),
                   format_value(k, k->max, hi, sizeof hi));
            return false;
        }
        v = (long long)u;
    } else if (setting_integer(s, &v) != 0) {
        report(ld, at, "%s: integer is out of range %s..%s", shown,
               format_value(k, k->min, lo, sizeof lo),
               format_value(k, k->max, hi, sizeof hi));
        return false;
    }
    if (v < k->min || v > k->max) {
        if (v < 0)
            snprintf(val, sizeof val, "%lld", v);
        else
            format_value(k, v, val, sizeof val);
        report(ld, at, "%s: %s is out of range %s..%s", shown, val,
               format_value(k, k->min, lo, sizeof lo),
               format_value(k, k->max, hi, sizeof hi));
        return false;
    }
    store_number(base, k, (uint64_t)v);
    return true;
}

static bool type_matches(enum key_type want, int type)
{
    switch (want) {
    case KEY_STRING:
    case KEY_ENUM: return type == CONFIG_TYPE_STRING;
    case KEY_INT: return type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64;
    case KEY_BOOL: return type == CONFIG_TYPE_BOOL;
    case KEY_SIZE:
        return type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64 ||
               type == CONFIG_TYPE_STRING;
    }
    return false;
}

static void load_value(struct loader *ld, const struct key_spec *k,
                       const config_setting_t *s, const char *shown, void *base,
                       struct slot *slot)
{
    struct slot at = slot_of(ld, s);
    bool ok = false;
    *slot = at;
    int type = config_setting_type(s);
    if (!type_matches(k->type, type)) {
        report(ld, &at, "%s: expected %s, got %s", shown,
               expected_phrase(k->type), type_phrase(type));
    } else {
        switch (k->type) {
        case KEY_STRING:
            ok = store_string(ld, k, &at, shown, config_setting_get_string(s),
                              base);
            break;
        case KEY_ENUM:
            ok = store_enum(ld, k, &at, shown, config_setting_get_string(s),
                            base);
            break;
        case KEY_INT:
        case KEY_SIZE: ok = store_integer(ld, k, &at, shown, s, base); break;
        case KEY_BOOL:
            store_bool(base, k, config_setting_get_bool(s));
            ok = true;
            break;
        }
    }
    slot->bad = !ok;
}

static void load_peers(struct loader *ld, const config_setting_t *list);

/*
 * Check every setting of `group` against the table.  `prefix` is the
 * table path of the group ("" for the root); `peer` is the index of the
 * peer entry being read, or -1 outside the peers list.
 */
static void walk(struct loader *ld, const config_setting_t *group,
                 const char *prefix, int peer)
{
    unsigned scope = peer >= 0 ? KF_PEER : 0;
    int count = config_setting_length(group);
    for (int i = 0; i < count; i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        struct slot at = slot_of(ld, s);
        char key[256], shown[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", name);
        if (peer >= 0)
            snprintf(shown, sizeof shown, "peers[%d].%s", peer, name);
        else
            snprintf(shown, sizeof shown, "%s", key);

        if (peer < 0 && strcmp(key, "peers") == 0) {
            load_peers(ld, s);
            continue;
        }
        const struct key_spec *k = find_key(key, scope);
        if (k != NULL) {
            size_t idx = (size_t)(k - keys);
            void *base =
                peer >= 0 ? (void *)&ld->cfg->peers[peer] : (void *)ld->cfg;
            struct slot *slot =
                peer >= 0 ? &ld->peer[peer][idx] : &ld->global[idx];
            load_value(ld, k, s, shown, base, slot);
        } else if (!is_known_group(key, scope)) {
            report(ld, &at, "unknown key '%s'", shown);
        } else if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
            report(ld, &at, "%s: expected a group, got %s", shown,
                   type_phrase(config_setting_type(s)));
        } else {
            if (peer < 0 && strcmp(key, "local") == 0)
                ld->local_group = at;
            if (peer < 0 && strcmp(key, "service") == 0) {
                ld->service_group = at;
                ld->cfg->service = 1;
            }
            walk(ld, s, key, peer);
        }
    }
}

static void load_peers(struct loader *ld, const config_setting_t *list)
{
    struct slot at = slot_of(ld, list);
    int type = config_setting_type(list);
    int count = config_setting_length(list);
    /* `peers = [];` is the only way to write an empty array: allow it. */
    if (type != CONFIG_TYPE_LIST &&
        !(type == CONFIG_TYPE_ARRAY && count == 0)) {
        report(ld, &at, "peers: expected a list of groups, got %s",
               type_phrase(type));
        return;
    }
    for (int i = 0; i < count; i++) {
        const config_setting_t *s = config_setting_get_elem(list, (unsigned)i);
        struct slot eat = slot_of(ld, s);
        if (i >= RELAY_MAX_PEERS) {
            report(ld, &eat, "peers[%d]: too many peers (at most %d)", i,
                   RELAY_MAX_PEERS);
            return;
        }
        if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
            report(ld, &eat, "peers[%d]: expected a group, got %s", i,
                   type_phrase(config_setting_type(s)));
            ld->peer_group[i] = eat;
            ld->peer_group[i].bad = true;
        } else {
            ld->peer_group[i] = eat;
            apply_defaults(&ld->cfg->peers[i], KF_PEER);
            ld->cfg->peers[i].source_line = eat.line;
            walk(ld, s, "peers", i);
        }
        ld->cfg->peer_count = (uint32_t)i + 1;
    }
}

static size_t key_index(const char *name)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (strcmp(keys[i].name, name) == 0)
            return i;
    abort(); /* a name below is missing from the table: programming error */
}

static const struct slot *global_slot(struct loader *ld, const char *name)
{
    return &ld->global[key_index(name)];
}

/* The slot of a peer key, or of the peer's group when the key is unset. */
static const struct slot *peer_slot(struct loader *ld, uint32_t peer,
                                    const char *name)
{
    const struct slot *s = &ld->peer[peer][key_index(name)];
    return s->line > 0 ? s : &ld->peer_group[peer];
}

/* Prefer the line of the first key that was actually set. */
static const struct slot *first_set(const struct slot *a, const struct slot *b)
{
    if (a->line > 0)
        return a;
    return b->line > 0 ? b : NULL;
}

static bool any_bad(struct loader *ld, const char *a, const char *b)
{
    return global_slot(ld, a)->bad || global_slot(ld, b)->bad;
}

static void check_readable(struct loader *ld, const struct slot *at,
                           const char *key, const char *path)
{
    int err = 0;
    /* O_NONBLOCK: a FIFO put there by mistake must not hang --check. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        err = errno;
    } else {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
            err = EISDIR;
        close(fd);
    }
    if (err != 0)
        report(ld, at, "%s: cannot read '%s': %s", key, path, strerror(err));
}

static void check_watermarks(struct loader *ld, const char *low_key,
                             uint64_t low, const char *high_key, uint64_t high)
{
    char a[32], b[32];
    if (low <= high || any_bad(ld, low_key, high_key))
        return;
    report(ld, first_set(global_slot(ld, low_key), global_slot(ld, high_key)),
           "%s (%s) exceeds %s (%s)", low_key, format_size(low, a, sizeof a),
           high_key, format_size(high, b, sizeof b));
}

/* Whether key `k` is required, or allowed at all, in this kind of file. */
static bool key_required(const struct loader *ld, const struct key_spec *k)
{
    return (k->flags & KF_REQUIRED) &&
           !(k->flags & (ld->cfg->service ? KF_JOB : KF_SERVICE));
}

static void check_mode(struct loader *ld)
{
    bool service = ld->cfg->service;
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key_spec *k = &keys[i];
        if (service && (k->flags & KF_JOB)) {
            for (uint32_t p = 0; p < ld->cfg->peer_count; p++)
                if ((k->flags & KF_PEER) && ld->peer[p][i].line > 0)
                    report(ld, &ld->peer[p][i],
                           "peers[%" PRIu32 "].%s: not in a service "
                           "configuration (jobs bring their rank ranges "
                           "when they register)",
                           p, k->name + strlen("peers."));
            if (!(k->flags & KF_PEER) && ld->global[i].line > 0)
                report(ld, &ld->global[i],
                       "%s: not in a service configuration (the `service` "
                       "group at line %d: jobs register through "
                       "service.control)",
                       k->name, ld->service_group.line);
        }
        if (!(k->flags & KF_PEER) && key_required(ld, k) &&
            ld->global[i].line == 0)
            report(ld, NULL, "missing required key '%s'%s", k->name,
                   service && (k->flags & KF_SERVICE) ? " (service mode)" : "");
    }
    /* Jobs share a service's streams: what the kernel holds unsent is
     * what another job's small message waits behind. */
    if (service && global_slot(ld, "tcp.notsent_lowat")->line == 0)
        ld->cfg->tcp_notsent_lowat = (uint32_t)KIB(256);
    if (service && ld->cfg->wan_plaintext &&
        !global_slot(ld, "wan.plaintext")->bad)
        report(ld, global_slot(ld, "wan.plaintext"),
               "wan.plaintext: a service needs TLS: its links are shared by "
               "every job and authenticated by certificate only");
    if (service && !global_slot(ld, "service.client_ca")->bad &&
        ld->cfg->service_client_ca[0] != '\0')
        check_readable(ld, global_slot(ld, "service.client_ca"),
                       "service.client_ca", ld->cfg->service_client_ca);
}

static void check_identity(struct loader *ld)
{
    const struct relay_config *cfg = ld->cfg;
    check_mode(ld);

    if (cfg->rank_count > 0 &&
        (uint64_t)cfg->first_rank + cfg->rank_count - 1 > GC_MAX_RANK)
        report(ld,
               first_set(global_slot(ld, "rank_count"),
                         global_slot(ld, "first_rank")),
               "rank_count: ranks %" PRIu32 "..%" PRIu64
               " go beyond the largest grid rank %u",
               cfg->first_rank, (uint64_t)cfg->first_rank + cfg->rank_count - 1,
               GC_MAX_RANK);

    if (cfg->local_unix[0] == '\0' && cfg->local_tcp[0] == '\0' &&
        !any_bad(ld, "local.unix", "local.tcp"))
        report(ld, &ld->local_group,
               "local: set local.unix or local.tcp (or both) so ranks can "
               "connect");

    const struct slot *token = global_slot(ld, "token_file");
    if (cfg->token_file[0] != '\0' && !token->bad) {
        int before = ld->error_count;
        check_readable(ld, token, "token_file", cfg->token_file);
        uint8_t buf[GC_TOKEN_MAX];
        char err[RELAY_PATH_MAX + 64];
        if (ld->error_count == before &&
            gc_token_read_file(cfg->token_file, buf, sizeof buf, err,
                               sizeof err) < 0)
            report(ld, token, "token_file: %s", err);
    }
}

static void check_tls(struct loader *ld)
{
    static const char *const tls_keys[] = {"tls.cert", "tls.key", "tls.ca"};
    if (ld->cfg->wan_plaintext)
        return;
    for (size_t i = 0; i < 3; i++) {
        const struct key_spec *k = &keys[key_index(tls_keys[i])];
        const struct slot *at = global_slot(ld, k->name);
        const char *path = field_of(ld->cfg, k);
        if (at->bad)
            continue;
        if (path[0] == '\0')
            report(ld, at->line > 0 ? at : NULL,
                   "missing required key '%s' (TLS is on; wan.plaintext = "
                   "false)",
                   k->name);
        else
            check_readable(ld, at, k->name, path);
    }
}

static void check_limits(struct loader *ld)
{
    const struct relay_config *cfg = ld->cfg;
    check_watermarks(ld, "flow.session_low_watermark",
                     cfg->session_low_watermark, "flow.session_high_watermark",
                     cfg->session_high_watermark);
    check_watermarks(ld, "flow.link_low_watermark", cfg->link_low_watermark,
                     "flow.link_high_watermark", cfg->link_high_watermark);

    if (cfg->reconnect_max_ms < cfg->reconnect_min_ms &&
        !any_bad(ld, "liveness.reconnect_min_ms", "liveness.reconnect_max_ms"))
        report(ld,
               first_set(global_slot(ld, "liveness.reconnect_max_ms"),
                         global_slot(ld, "liveness.reconnect_min_ms")),
               "liveness.reconnect_max_ms (%" PRIu32
               ") is below liveness.reconnect_min_ms (%" PRIu32 ")",
               cfg->reconnect_max_ms, cfg->reconnect_min_ms);

    /* Otherwise healthy idle streams would be killed between two PINGs. */
    if (cfg->stream_timeout_ms <= cfg->ping_interval_ms &&
        !any_bad(ld, "liveness.stream_timeout_ms", "liveness.ping_interval_ms"))
        report(ld,
               first_set(global_slot(ld, "liveness.stream_timeout_ms"),
                         global_slot(ld, "liveness.ping_interval_ms")),
               "liveness.stream_timeout_ms (%" PRIu32
               ") must exceed liveness.ping_interval_ms (%" PRIu32 ")",
               cfg->stream_timeout_ms, cfg->ping_interval_ms);
}

static bool ranges_overlap(uint32_t a_first, uint32_t a_count, uint32_t b_first,
                           uint32_t b_count)
{
    uint64_t a_end = (uint64_t)a_first + a_count;
    uint64_t b_end = (uint64_t)b_first + b_count;
    return a_count > 0 && b_count > 0 && a_first < b_end && b_first < a_end;
}

/* Whether peer `i` has a usable rank range for overlap checks. */
static bool peer_range_ok(struct loader *ld, uint32_t i)
{
    return !ld->peer[i][key_index("peers.first_rank")].bad &&
           !ld->peer[i][key_index("peers.rank_count")].bad &&
           ld->cfg->peers[i].rank_count > 0;
}

static void check_peer(struct loader *ld, uint32_t i)
{
    const struct relay_config *cfg = ld->cfg;
    const struct relay_peer_config *p = &cfg->peers[i];
    const struct slot *group = &ld->peer_group[i];
    bool site_ok = cfg->site_name[0] != '\0';

    for (size_t k = 0; k < KEY_COUNT; k++)
        if ((keys[k].flags & KF_PEER) && key_required(ld, &keys[k]) &&
            ld->peer[i][k].line == 0)
            report(ld, group, "peers[%" PRIu32 "]: missing required key '%s'",
                   i, keys[k].name + strlen("peers."));

    if (p->name[0] != '\0') {
        const struct slot *at = peer_slot(ld, i, "peers.name");
        if (strcmp(p->name, cfg->site_name) == 0)
            report(ld, at, "peers[%" PRIu32 "]: '%s' is this site's own name",
                   i, p->name);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(cfg->peers[j].name, p->name) == 0) {
                report(ld, at,
                       "peers[%" PRIu32 "]: duplicate peer name '%s' (first "
                       "used by peers[%" PRIu32 "] at line %d)",
                       i, p->name, j, cfg->peers[j].source_line);
                break;
            }
    }

    if (peer_range_ok(ld, i)) {
        const struct slot *at = peer_slot(ld, i, "peers.first_rank");
        uint64_t last = (uint64_t)p->first_rank + p->rank_count - 1;
        if (last > GC_MAX_RANK)
            report(ld, at,
                   "peers[%" PRIu32 "] (%s): ranks %" PRIu32 "..%" PRIu64
                   " go beyond the largest grid rank %u",
                   i, p->name, p->first_rank, last, GC_MAX_RANK);
        if (!any_bad(ld, "first_rank", "rank_count") &&
            ranges_overlap(p->first_rank, p->rank_count, cfg->first_rank,
                           cfg->rank_count))
            report(ld, at,
                   "peers[%" PRIu32 "] (%s): ranks %" PRIu32 "..%" PRIu64
                   " overlap this site's ranks %" PRIu32 "..%" PRIu64,
                   i, p->name, p->first_rank, last, cfg->first_rank,
                   (uint64_t)cfg->first_rank + cfg->rank_count - 1);
        for (uint32_t j = 0; j < i; j++) {
            const struct relay_peer_config *q = &cfg->peers[j];
            if (peer_range_ok(ld, j) &&
                ranges_overlap(p->first_rank, p->rank_count, q->first_rank,
                               q->rank_count))
                report(ld, at,
                       "peers[%" PRIu32 "] (%s): ranks %" PRIu32 "..%" PRIu64
                       " overlap peers[%" PRIu32 "] (%s) ranks %" PRIu32
                       "..%" PRIu64,
                       i, p->name, p->first_rank, last, j, q->name,
                       q->first_rank,
                       (uint64_t)q->first_rank + q->rank_count - 1);
        }
    }

    /* An AUTO decision needs both names; without them it means nothing. */
    bool mode_known =
        (p->connect != RELAY_CONNECT_AUTO) || (site_ok && p->name[0] != '\0');
    if (!mode_known || ld->peer[i][key_index("peers.connect")].bad)
        return;
    enum relay_connect_mode mode = relay_config_peer_mode(cfg, p);
    const char *why = p->connect == RELAY_CONNECT_AUTO
                          ? " (connect = auto and our name sorts first)"
                          : "";
    if (mode == RELAY_CONNECT_DIAL && p->address[0] == '\0' &&
        !ld->peer[i][key_index("peers.address")].bad)
        report(ld, group,
               "peers[%" PRIu32 "] (%s): address is required because we "
               "dial%s",
               i, p->name, why);
    why = p->connect == RELAY_CONNECT_AUTO
              ? " (connect = auto and its name sorts first)"
              : "";
    if (mode == RELAY_CONNECT_LISTEN && cfg->wan_listen[0] == '\0' &&
        !global_slot(ld, "wan.listen")->bad)
        report(ld, group,
               "peers[%" PRIu32 "] (%s): wan.listen is required because the "
               "peer dials us%s",
               i, p->name, why);
}

static void validate(struct loader *ld)
{
    check_identity(ld);
    check_tls(ld);
    check_limits(ld);
    for (uint32_t i = 0; i < ld->cfg->peer_count; i++)
        if (!ld->peer_group[i].bad)
            check_peer(ld, i);
}

int relay_config_load(const char *path, struct relay_config *cfg, FILE *errors)
{
    int status = -1;
    struct loader *ld = NULL;
    char resolved[PATH_MAX];
    int fd = -1;
    config_t lc;
    config_init(&lc);
    relay_config_defaults(cfg);

    ld = calloc(1, sizeof *ld);
    if (ld == NULL) {
        if (errors != NULL)
            fprintf(errors, "%s: out of memory\n", path);
        goto cleanup;
    }
    ld->errors = errors;
    ld->path = path;
    ld->cfg = cfg;

    /* libconfig only says "file I/O error"; ask the kernel for the reason. */
    if (realpath(path, resolved) == NULL ||
        (fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
        report(ld, NULL, "cannot read: %s", strerror(errno));
        goto cleanup;
    }
    if (strlen(resolved) >= sizeof cfg->source_file) {
        report(ld, NULL, "path too long");
        goto cleanup;
    }
    snprintf(cfg->source_file, sizeof cfg->source_file, "%s", resolved);
    snprintf(ld->dir, sizeof ld->dir, "%s", resolved);
    char *slash = strrchr(ld->dir, '/');
    slash[slash == ld->dir ? 1 : 0] = '\0';

    /* @include'd files are found next to the config, like relative paths. */
    config_set_include_dir(&lc, ld->dir);
    if (config_read_file(&lc, path) != CONFIG_TRUE) {
        struct slot at = {.file = config_error_file(&lc),
                          .line = config_error_line(&lc)};
        if (at.file == NULL)
            at.file = path;
        report(ld, &at, "%s", config_error_text(&lc));
        goto cleanup;
    }
    walk(ld, config_root_setting(&lc), "", -1);
    validate(ld);
    if (ld->error_count == 0)
        status = 0;

cleanup:
    if (fd >= 0)
        close(fd);
    config_destroy(&lc);
    free(ld);
    return status;
}

void relay_config_unreloadable(const struct relay_config *a,
                               const struct relay_config *b,
                               void (*changed)(const char *key, void *arg),
                               void *arg)
{
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key_spec *k = &keys[i];
        if (k->flags & (KF_RELOAD | KF_PEER))
            continue;
        const void *x = field_of((void *)a, k), *y = field_of((void *)b, k);
        int differ = k->type == KEY_STRING || k->type == KEY_ENUM
                         ? strcmp(x, y) != 0
                         : memcmp(x, y, k->size) != 0;
        if (differ)
            changed(k->name, arg);
    }
    if (a->service != b->service)
        changed("service", arg);
}

/* Print `text` wrapped at 76 columns, every line indented by `indent`. */
void relay_config_print_reference(FILE *out)
{
    /* main.c prints the heading; this is only what every key shares. */
    fputs("Sizes take an integer or a string with a K, M or G suffix "
          "(\"256K\").\n"
          "Relative paths are resolved against the config file's "
          "directory.\n\n",
          out);
    bool in_peers = false;
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key_spec *k = &keys[i];
        char def[64], lo[32], hi[32];
        if ((k->flags & KF_PEER) && !in_peers) {
            in_peers = true;
            fputs("\npeers (list of groups, default empty)\n", out);
            gc_print_wrapped(out,
                             "One group per peer site: peers = ( { name = ...; "
                             "}, ... ); with these keys:",
                             4);
        }
        switch (k->type) {
        case KEY_STRING:
        case KEY_ENUM: snprintf(def, sizeof def, "\"%s\"", k->def_str); break;
        case KEY_BOOL:
            snprintf(def, sizeof def, "%s", k->def ? "true" : "false");
            break;
        case KEY_INT:
        case KEY_SIZE: format_value(k, k->def, def, sizeof def); break;
        }
        fprintf(out, "%s (", k->name);
        switch (k->type) {
        case KEY_STRING: fputs("string", out); break;
        case KEY_BOOL: fputs("bool", out); break;
        case KEY_INT:
        case KEY_SIZE:
            fprintf(out, "%s %s..%s", k->type == KEY_INT ? "int" : "size",
                    format_value(k, k->min, lo, sizeof lo),
                    format_value(k, k->max, hi, sizeof hi));
            break;
        case KEY_ENUM:
            fputs("enum ", out);
            for (const struct enum_word *w = k->words; w->word != NULL; w++)
                fprintf(out, "%s%s", w == k->words ? "" : "|", w->word);
            break;
        }
        if (k->flags & KF_REQUIRED)
            fputs(", required)\n", out);
        else
            fprintf(out, ", default %s)\n", def);
        gc_print_wrapped(out, k->doc, 4);
    }
}
