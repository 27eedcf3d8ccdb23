/*
 * gridrelay configuration.  Every key is declared once in the table in
 * relay_config.c (name, type, default, bounds, doc); loading, `--check`,
 * `--help` and docs/gridrelay.md are all derived from that table.
 */
#ifndef RELAY_CONFIG_H
#define RELAY_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#define RELAY_MAX_PEERS 64
#define RELAY_NAME_MAX  63
#define RELAY_PATH_MAX  4096

enum relay_connect_mode {
    RELAY_CONNECT_AUTO = 0, /* the site whose name sorts first dials */
    RELAY_CONNECT_DIAL,     /* we open the streams to the peer */
    RELAY_CONNECT_LISTEN,   /* the peer dials our wan_listen address */
};

struct relay_peer_config {
    char name[RELAY_NAME_MAX + 1];
    uint32_t first_rank;
    uint32_t rank_count;
    char address[256]; /* "host:port"; required when we dial */
    enum relay_connect_mode connect;
    int source_line; /* for diagnostics at run time */
};

struct relay_config {
    /* identity */
    char site_name[RELAY_NAME_MAX + 1];
    uint32_t job_id;
    uint32_t first_rank;
    uint32_t rank_count;
    char token_file[RELAY_PATH_MAX];

    /* endpoints ("" disables) */
    char local_unix[RELAY_PATH_MAX]; /* Unix socket path for ranks */
    char local_tcp[256];             /* host:port for ranks */
    char wan_listen[256];            /* host:port peers dial */
    /* host:port (tenants see aggregates) or unix:/path (the operator's
     * socket: everything) for /metrics and /status */
    char http_listen[RELAY_PATH_MAX];

    /* data path */
    uint32_t streams;               /* K parallel TCP streams per peer link */
    uint32_t chunk_size;            /* bytes; larger messages are striped */
    uint64_t redundant_bytes;       /* in flight below this: chunks go twice */
    uint64_t redundant_min_message; /* ... if their message is this big */
    uint64_t rank_credit; /* bytes in flight per (source, dest rank) */
    uint64_t link_window; /* re-send buffer bound per link, bytes */
    uint64_t session_high_watermark; /* bytes queued to one rank session */
    uint64_t session_low_watermark;
    uint64_t link_high_watermark; /* bytes queued on one link's streams */
    uint64_t link_low_watermark;
    uint32_t ack_interval_ms; /* longest delay before a cumulative ACK */

    /* liveness and recovery */
    uint32_t ping_interval_ms;
    uint32_t stream_timeout_ms; /* no traffic for this long: stream dead */
    uint32_t reconnect_min_ms;  /* first re-dial backoff */
    uint32_t reconnect_max_ms;  /* backoff ceiling */
    uint32_t peer_give_up_ms;   /* link down this long: peer gone for good */

    /* TLS on WAN streams */
    int wan_plaintext; /* 1 only with the explicit switch */
    char tls_cert[RELAY_PATH_MAX];
    char tls_key[RELAY_PATH_MAX];
    char tls_ca[RELAY_PATH_MAX];

    /* socket options on WAN streams */
    char tcp_congestion[32]; /* "" keeps the system default */
    uint32_t tcp_sndbuf;     /* 0 keeps the kernel's autotuning */
    uint32_t tcp_rcvbuf;
    int tcp_nodelay;
    int tcp_restart_after_idle; /* bbr from STARTUP after idling */
    int tcp_keepalive;
    uint32_t tcp_keepalive_idle_s;
    uint32_t tcp_notsent_lowat; /* 0 keeps the kernel's default */

    /* operations */
    char log_level[16];
    char log_file[RELAY_PATH_MAX]; /* "" = stderr */
    int admin_enabled;             /* POST /admin/break-stream allowed */

    /* service mode (a `service` group): jobs register at run time */
    int service;
    char service_control[RELAY_PATH_MAX]; /* host:port or unix:/path */
    char service_client_ca[RELAY_PATH_MAX];
    uint32_t service_lease_s;     /* longest a launcher may stay silent */
    uint32_t service_max_jobs;    /* registered at once */
    uint64_t service_job_memory;  /* bytes of one job held here per peer */
    uint32_t service_owner_jobs;  /* registered at once by one owner */
    uint32_t service_max_ranks;   /* ranks of one job, all sites together */
    uint32_t service_owner_ranks; /* this site's ranks of one owner's jobs */
    char service_admins[512];     /* operators' certificate names, a,b,c */

    /* limits on connections that have not proven who they are */
    uint32_t max_handshakes;       /* rank sessions + WAN streams at once */
    uint32_t http_max_connections; /* each HTTP endpoint */

    uint32_t peer_count;
    struct relay_peer_config peers[RELAY_MAX_PEERS];

    char source_file[RELAY_PATH_MAX]; /* path the config was loaded from */
};

/* Fill `cfg` with the table's defaults (no peers, no identity). */
void relay_config_defaults(struct relay_config *cfg);

/*
 * Load and validate `path`.  Every problem is printed to `errors` as
 * "file:line: message" (one per line, all of them, not just the first).
 * Returns 0 when the file is valid, -1 otherwise.  Validation covers
 * unknown keys, wrong types, out-of-range values, missing required keys,
 * unreadable certificate/key/CA/token files, unknown congestion control
 * (checked against /proc/sys/net/ipv4/tcp_available_congestion_control),
 * overlapping rank ranges, duplicate peer names, low > high watermarks.
 */
int relay_config_load(const char *path, struct relay_config *cfg, FILE *errors);

/*
 * The keys of the whole file (not per peer) that differ between `a` and
 * `b` and that a reload (SIGHUP) does not apply: `changed` gets each
 * name.  Reloaded: log.*, tls.*, the service.* limits and admins, the
 * connection limits, and the peers (relay_reload).
 */
void relay_config_unreloadable(const struct relay_config *a,
                               const struct relay_config *b,
                               void (*changed)(const char *key, void *arg),
                               void *arg);

/* Print every key with type, default, bounds and doc (for --help). */
void relay_config_print_reference(FILE *out);

/* Resolved connect mode for `peer` (AUTO decided by name order). */
enum relay_connect_mode
relay_config_peer_mode(const struct relay_config *cfg,
                       const struct relay_peer_config *peer);

#endif
