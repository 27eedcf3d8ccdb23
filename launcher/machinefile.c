/*
 * Machine file parser (format: docs/machinefile.md).
 *
 * The file is read line by line into a fixed buffer, so a runaway line
 * (or a binary file) cannot make us allocate without bound.  Every problem
 * is reported and parsing goes on, so a user fixes the whole file in one
 * round; to keep one mistake from producing a cascade of follow-up errors,
 * a line is still registered (its host for the duplicate check, its relay
 * flag for the site) as far as its valid parts allow.
 */
#include "machinefile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#define MF_LINE_MAX   4095
#define MF_SLOTS_MAX  1000000u
#define MF_TOKENS_MAX (MF_LINE_MAX / 2 + 1)
/* gridrelay's gc_endpoint_parse copies the path into sockaddr_un. */
#define MF_UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

enum mf_key {
    KEY_SLOTS = 1u << 0,
    KEY_CLUSTER = 1u << 1,
    KEY_RELAY = 1u << 2,
    KEY_WAN = 1u << 3,
    KEY_LOCAL = 1u << 4,
    KEY_CONNECT = 1u << 5,
    KEY_FATTREE = 1u << 6,
    KEY_PROGRAM = 1u << 7,
    KEY_SERVICE = 1u << 8,
};

struct key_info {
    const char *name;
    enum mf_key key;
    bool relay_only;
    const char *usage; /* shown when the value is missing */
};

static const struct key_info keys[] = {
    {"slots", KEY_SLOTS, false, "slots=N"},
    {"cluster", KEY_CLUSTER, false, "cluster=NAME"},
    {"wan", KEY_WAN, true, "wan=HOST:PORT"},
    {"local", KEY_LOCAL, true, "local=ENDPOINT"},
    {"connect", KEY_CONNECT, true, "connect=auto|dial|listen"},
    {"service", KEY_SERVICE, true, "service=HOST:PORT|unix:/PATH"},
    {"fattree", KEY_FATTREE, false, "fattree=M1,M2,..."},
    {"program", KEY_PROGRAM, false, "program=PATH ARGS..."},
};
#define KEY_COUNT (sizeof keys / sizeof keys[0])

/* Every host seen, for the duplicate check (open addressing on names). */
struct host_seen {
    char *name;
    int line;
};

struct parser {
    const char *path;
    FILE *errors;
    int error_count;
    struct machinefile *mf;
    uint32_t *host_cap; /* capacity of mf->sites[i].hosts */
    uint32_t site_cap;
    struct host_seen *seen;
    size_t seen_count;
    size_t seen_cap; /* power of two, or 0 */
    uint64_t total_slots;
    bool total_reported;
    int host_lines; /* lines that named a host, valid or not */
};

/* The fields of one line, before they are merged into its site. */
struct line_fields {
    const char *host; /* NULL when the host name is invalid */
    const char *cluster;
    bool relay;
    bool has_slots;
    uint32_t slots;
    const char *wan, *local, *service;
    bool service_given; /* even with a bad value */
    enum mf_connect connect;
    struct gc_sched_fattree fattree; /* 0 levels: not given, or bad */
    char **program; /* program= and the words after it; NULL: not given */
    int program_argc;
};

__attribute__((format(printf, 3, 4))) static void
report(struct parser *p, int line, const char *fmt, ...)
{
    p->error_count++;
    if (p->errors == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(p->errors, "%s:%d: ", p->path, line);
    vfprintf(p->errors, fmt, ap);
    fputc('\n', p->errors);
    va_end(ap);
}

static bool is_host_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static bool is_cluster_char(char c)
{
    return c != '.' && is_host_char(c);
}

static bool all_chars(const char *s, size_t n, bool (*ok)(char))
{
    for (size_t i = 0; i < n; i++)
        if (!ok(s[i]))
            return false;
    return true;
}

/*
 * Decimal digits only: signs, spaces and hex are rejected, which strtoul
 * would silently accept or wrap.
 */
static int parse_uint(const char *s, size_t n, uint32_t min, uint32_t max,
                      uint32_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > max)
            return -1;
    }
    if (v < min)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/*
 * Syntax of HOST:PORT or [V6]:PORT without resolving anything: the
 * launcher host need not be able to resolve other sites' names.  Returns
 * NULL or why `text` is not valid.  Callers have checked that `text` is at
 * most MF_ENDPOINT_MAX characters, which bounds the address copy below.
 */
static const char *check_inet_endpoint(const char *text)
{
    const char *host = text;
    size_t host_len;
    const char *port;
    uint32_t port_num;

    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':')
            return "want [IPV6]:PORT";
        char addr[MF_ENDPOINT_MAX + 1];
        size_t len = (size_t)(close - text - 1);
        memcpy(addr, text + 1, len);
        addr[len] = '\0';
        /* A zone index (fe80::1%eth0) is legal but unknown to inet_pton. */
        char *zone = strchr(addr, '%');
        if (zone != NULL) {
            if (zone[1] == '\0' ||
                !all_chars(zone + 1, strlen(zone + 1), is_host_char))
                return "bad IPv6 zone";
            *zone = '\0';
        }
        struct in6_addr a6;
        if (inet_pton(AF_INET6, addr, &a6) != 1)
            return "bad IPv6 address";
        port = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon == NULL || colon == text)
            return "want HOST:PORT";
        host_len = (size_t)(colon - text);
        if (memchr(host, ':', host_len) != NULL)
            return "put an IPv6 address in brackets: [ADDR]:PORT";
        if (!all_chars(host, host_len, is_host_char))
            return "the host may contain only letters, digits, '.', '_' "
                   "and '-'";
        port = colon + 1;
    }
    if (parse_uint(port, strlen(port), 1, 65535, &port_num) != 0)
        return "the port must be 1..65535";
    return NULL;
}

static bool is_path_char(char c)
{
    return (unsigned char)c >= 0x20 && c != 0x7f;
}

/* local= also takes a Unix socket: unix:/PATH or /PATH. */
static const char *check_local_endpoint(const char *text)
{
    const char *path = NULL;
    if (strncmp(text, "unix:", 5) == 0)
        path = text + 5;
    else if (text[0] == '/')
        path = text;
    if (path == NULL)
        return check_inet_endpoint(text);
    if (path[0] != '/')
        return "the Unix socket path must be absolute";
    if (strlen(path) > MF_UNIX_PATH_MAX)
        return "the Unix socket path is longer than 107 characters";
    if (!all_chars(path, strlen(path), is_path_char))
        return "control character in the Unix socket path";
    return NULL;
}

static size_t hash_name(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static int seen_grow(struct parser *p)
{
    size_t cap = p->seen_cap == 0 ? 64 : p->seen_cap * 2;
    struct host_seen *table = calloc(cap, sizeof *table);
    if (table == NULL)
        return -1;
    for (size_t i = 0; i < p->seen_cap; i++) {
        if (p->seen[i].name == NULL)
            continue;
        size_t j = hash_name(p->seen[i].name) & (cap - 1);
        while (table[j].name != NULL)
            j = (j + 1) & (cap - 1);
        table[j] = p->seen[i];
    }
    free(p->seen);
    p->seen = table;
    p->seen_cap = cap;
    return 0;
}

/*
 * Record `name` first seen at `line`.  Returns 0, the (positive) line of
 * an earlier occurrence, or -1 when out of memory.
 */
static int seen_add(struct parser *p, const char *name, int line)
{
    /* Keep the table at most half full so probes stay short. */
    if ((p->seen_count + 1) * 2 > p->seen_cap && seen_grow(p) != 0)
        return -1;
    size_t j = hash_name(name) & (p->seen_cap - 1);
    while (p->seen[j].name != NULL) {
        if (strcmp(p->seen[j].name, name) == 0)
            return p->seen[j].line;
        j = (j + 1) & (p->seen_cap - 1);
    }
    p->seen[j].name = strdup(name);
    if (p->seen[j].name == NULL)
        return -1;
    p->seen[j].line = line;
    p->seen_count++;
    return 0;
}

/* The site named `name`, created at `line` if new; NULL when out of memory. */
static struct mf_site *site_get(struct parser *p, const char *name, int line)
{
    struct machinefile *mf = p->mf;
    for (uint32_t i = 0; i < mf->site_count; i++)
        if (strcmp(mf->sites[i].name, name) == 0)
            return &mf->sites[i];
    if (mf->site_count == p->site_cap) {
        uint32_t cap = p->site_cap == 0 ? 8 : p->site_cap * 2;
        struct mf_site *sites = realloc(mf->sites, cap * sizeof *sites);
        if (sites == NULL)
            return NULL;
        mf->sites = sites;
        uint32_t *host_cap = realloc(p->host_cap, cap * sizeof *host_cap);
        if (host_cap == NULL)
            return NULL;
        p->host_cap = host_cap;
        p->site_cap = cap;
    }
    struct mf_site *s = &mf->sites[mf->site_count];
    memset(s, 0, sizeof *s);
    strcpy(s->name, name);
    s->first_line = line;
    s->relay_connect = MF_CONNECT_AUTO;
    p->host_cap[mf->site_count] = 0;
    mf->site_count++;
    return s;
}

static int site_add_host(struct parser *p, struct mf_site *s, const char *name,
                         uint32_t slots, int line)
{
    uint32_t *cap = &p->host_cap[s - p->mf->sites];
    if (s->host_count == *cap) {
        uint32_t n = *cap == 0 ? 8 : *cap * 2;
        struct mf_host *hosts = realloc(s->hosts, n * sizeof *hosts);
        if (hosts == NULL)
            return -1;
        s->hosts = hosts;
        *cap = n;
    }
    struct mf_host *h = &s->hosts[s->host_count++];
    memset(h, 0, sizeof *h);
    strcpy(h->name, name);
    h->slots = slots;
    h->line = line;
    s->total_slots += slots;
    return 0;
}

static bool same_fattree(const struct gc_sched_fattree *a,
                         const struct gc_sched_fattree *b)
{
    if (a->levels != b->levels)
        return false;
    for (int l = 0; l < a->levels; l++)
        if (a->arity[l] != b->arity[l])
            return false;
    return true;
}

/* One fat tree per site: the first fattree= sets it, later ones must agree. */
static void site_set_fattree(struct parser *p, struct mf_site *s,
                             const struct gc_sched_fattree *tree, int line)
{
    if (s->fattree_line == 0) {
        s->fattree = *tree;
        s->fattree_line = line;
    } else if (!same_fattree(&s->fattree, tree)) {
        char text[GC_SCHED_FATTREE_TEXT_MAX];
        gc_sched_fattree_format(&s->fattree, text, sizeof text);
        report(p, line,
               "site '%s' already has fattree=%s (line %d); every fattree= "
               "of a site must be the same",
               s->name, text, s->fattree_line);
    }
}

/* One program per site, in one block: the pointers, then the words. */
static int site_set_program(struct parser *p, struct mf_site *s,
                            char *const *words, int count, int line)
{
    if (s->program_line != 0) {
        report(p, line,
               "site '%s' already has program= (line %d); give a site's "
               "program once",
               s->name, s->program_line);
        return 0;
    }
    size_t size = (size_t)count * sizeof(char *);
    for (int i = 0; i < count; i++)
        size += strlen(words[i]) + 1;
    s->program = malloc(size);
    if (s->program == NULL)
        return -1;
    char *text = (char *)(s->program + count);
    for (int i = 0; i < count; i++) {
        s->program[i] = text;
        text = stpcpy(text, words[i]) + 1;
    }
    s->program_argc = count;
    s->program_line = line;
    return 0;
}

static const struct key_info *find_key(const char *name, size_t len)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (strlen(keys[i].name) == len &&
            strncmp(keys[i].name, name, len) == 0)
            return &keys[i];
    return NULL;
}

/* Check one key=value token; problems are reported, not returned. */
static void parse_token(struct parser *p, int line, char *tok,
                        struct line_fields *f, unsigned *given)
{
    char *eq = strchr(tok, '=');
    if (strcmp(tok, "relay") == 0) {
        if (*given & KEY_RELAY)
            report(p, line, "'relay' given twice");
        *given |= KEY_RELAY;
        return;
    }
    size_t name_len = eq != NULL ? (size_t)(eq - tok) : strlen(tok);
    if (eq != NULL && name_len == 5 && strncmp(tok, "relay", 5) == 0) {
        report(p, line, "'relay' takes no value (write just 'relay')");
        return;
    }
    if (name_len == 0) {
        report(p, line, "'%s' has no key name (want key=value)", tok);
        return;
    }
    const struct key_info *k = find_key(tok, name_len);
    if (k == NULL) {
        report(p, line, "unknown key '%.*s'", (int)name_len, tok);
        return;
    }
    if (*given & k->key) {
        report(p, line, "key '%s' given twice", k->name);
        return;
    }
    *given |= k->key;
    if (eq == NULL || eq[1] == '\0') {
        report(p, line, "key '%s' needs a value (%s)", k->name, k->usage);
        return;
    }
    if (k->relay_only && !f->relay) {
        report(p, line, "'%s' is only valid on the relay line", k->name);
        return;
    }

    const char *v = eq + 1;
    const char *why;
    switch (k->key) {
    case KEY_SLOTS:
        if (parse_uint(v, strlen(v), 1, MF_SLOTS_MAX, &f->slots) != 0)
            report(p, line, "bad slots value '%s' (want an integer 1..%u)", v,
                   MF_SLOTS_MAX);
        else
            f->has_slots = true;
        break;
    case KEY_CLUSTER:
        if (strlen(v) > MF_NAME_MAX ||
            !all_chars(v, strlen(v), is_cluster_char))
            report(p, line,
                   "bad cluster name '%s' (want 1 to %d letters, digits, "
                   "'_' or '-')",
                   v, MF_NAME_MAX);
        else
            f->cluster = v;
        break;
    case KEY_WAN:
        if (strncmp(v, "unix:", 5) == 0 || v[0] == '/')
            report(p, line,
                   "bad wan= address '%s' (peer relays dial over TCP: want "
                   "HOST:PORT)",
                   v);
        else if (strlen(v) > MF_ENDPOINT_MAX)
            report(p, line,
                   "bad wan= address '%.32s...' (longer than %d "
                   "characters)",
                   v, MF_ENDPOINT_MAX);
        else if ((why = check_inet_endpoint(v)) != NULL)
            report(p, line, "bad wan= address '%s' (%s)", v, why);
        else
            f->wan = v;
        break;
    case KEY_LOCAL:
        if (strlen(v) > MF_ENDPOINT_MAX)
            report(p, line,
                   "bad local= endpoint '%.32s...' (longer than %d "
                   "characters)",
                   v, MF_ENDPOINT_MAX);
        else if ((why = check_local_endpoint(v)) != NULL)
            report(p, line, "bad local= endpoint '%s' (%s)", v, why);
        else
            f->local = v;
        break;
    case KEY_SERVICE:
        /* The control endpoint of the site's running gridrelay service. */
        f->service_given = true;
        if (strlen(v) > MF_ENDPOINT_MAX)
            report(p, line,
                   "bad service= endpoint '%.32s...' (longer than %d "
                   "characters)",
                   v, MF_ENDPOINT_MAX);
        else if ((why = check_local_endpoint(v)) != NULL)
            report(p, line, "bad service= endpoint '%s' (%s)", v, why);
        else
            f->service = v;
        break;
    case KEY_CONNECT:
        if (strcmp(v, "auto") == 0)
            f->connect = MF_CONNECT_AUTO;
        else if (strcmp(v, "dial") == 0)
            f->connect = MF_CONNECT_DIAL;
        else if (strcmp(v, "listen") == 0)
            f->connect = MF_CONNECT_LISTEN;
        else
            report(p, line,
                   "bad connect value '%s' (want auto, dial or "
                   "listen)",
                   v);
        break;
    case KEY_FATTREE:
        /* The parser libgridcoll runs on GRIDCOLL_FATTREE, so a value the
         * file accepts is one every rank accepts. */
        if (gc_sched_fattree_parse(v, &f->fattree, NULL, 0) != 0)
            report(p, line,
                   "bad fattree value '%s' (want 1 to %d comma-separated "
                   "positive integers with a product of at most %d)",
                   v, GC_SCHED_MAX_LEVELS, GC_SCHED_MAX_RANKS);
        break;
    case KEY_PROGRAM: break; /* parse_line takes the rest of the line */
    case KEY_RELAY: break;   /* handled above */
    }
}

/* Merge a checked line into its site.  -1 only when out of memory. */
static int add_line(struct parser *p, int line, const struct line_fields *f)
{
    if (f->host != NULL) {
        int first = seen_add(p, f->host, line);
        if (first < 0)
            return -1;
        if (first > 0) {
            /* The line is a mistake as a whole: do not let it also count
             * as a second relay or a new site. */
            report(p, line, "duplicate host '%s' (first at line %d)", f->host,
                   first);
            return 0;
        }
    }
    if (f->cluster == NULL)
        return 0;
    struct mf_site *s = site_get(p, f->cluster, line);
    if (s == NULL)
        return -1;

    if (f->relay) {
        if (s->relay_line != 0) {
            report(p, line,
                   "site '%s' already has a relay ('%s' at line %d); mark "
                   "only one host 'relay'",
                   s->name, s->relay_host, s->relay_line);
        } else {
            s->relay_line = line;
            if (f->host != NULL)
                strcpy(s->relay_host, f->host);
            if (f->wan != NULL)
                strcpy(s->relay_wan, f->wan);
            if (f->local != NULL)
                strcpy(s->relay_local, f->local);
            if (f->service != NULL)
                strcpy(s->relay_service, f->service);
            s->relay_names_service = f->service_given;
            s->relay_connect = f->connect;
        }
    }
    if (f->fattree.levels > 0)
        site_set_fattree(p, s, &f->fattree, line);
    if (f->program != NULL &&
        site_set_program(p, s, f->program, f->program_argc, line) != 0)
        return -1;

    /* The relay host runs ranks only when slots= says so. */
    uint32_t slots = f->has_slots ? f->slots : f->relay ? 0 : 1;
    if (slots == 0 || f->host == NULL)
        return 0;
    p->total_slots += slots;
    if (p->total_slots > UINT32_MAX) {
        /* Counts are 32-bit everywhere downstream; one report suffices. */
        if (!p->total_reported)
            report(p, line, "the machine file has more than %u slots in total",
                   UINT32_MAX);
        p->total_reported = true;
        return 0;
    }
    return site_add_host(p, s, f->host, slots, line);
}

/* Check one line (comment already cut off); -1 only when out of memory. */
static int parse_line(struct parser *p, int line, char *text)
{
    char *tokens[MF_TOKENS_MAX];
    size_t count = 0;
    for (char *save = NULL, *t = strtok_r(text, " \t\r", &save); t != NULL;
         t = strtok_r(NULL, " \t\r", &save))
        tokens[count++] = t;
    if (count == 0)
        return 0;
    p->host_lines++;

    struct line_fields f;
    memset(&f, 0, sizeof f);
    f.connect = MF_CONNECT_AUTO;
    size_t host_len = strlen(tokens[0]);
    /* Without a host name the first word is a key: check it like the rest,
     * so every mistake on the line is reported. */
    size_t first_key = 1;
    if (strchr(tokens[0], '=') != NULL) {
        first_key = 0;
        report(p, line,
               "line starts with '%s', not a host name (one host per line, "
               "host name first)",
               tokens[0]);
    } else if (host_len > MF_HOST_MAX) {
        report(p, line, "host name longer than %d characters", MF_HOST_MAX);
    } else if (!all_chars(tokens[0], host_len, is_host_char)) {
        report(p, line,
               "bad host name '%s' (want letters, digits, '.', '_' or '-')",
               tokens[0]);
    } else {
        f.host = tokens[0];
    }

    /* program= takes the rest of the line: its words are the program's
     * path and arguments, not keys. */
    size_t keys_end = first_key;
    while (keys_end < count && strcmp(tokens[keys_end], "program") != 0 &&
           strncmp(tokens[keys_end], "program=", 8) != 0)
        keys_end++;

    /*
     * 'relay' may come after the relay-only keys it permits.  A mistyped
     * "relay=yes" still marks the relay so that the site is not also
     * reported as having none.
     */
    for (size_t i = first_key; i < keys_end; i++)
        if (strcmp(tokens[i], "relay") == 0 ||
            strncmp(tokens[i], "relay=", 6) == 0)
            f.relay = true;

    unsigned given = 0;
    for (size_t i = first_key; i < count && i <= keys_end; i++)
        parse_token(p, line, tokens[i], &f, &given);
    if (keys_end < count && tokens[keys_end][7] == '=' &&
        tokens[keys_end][8] != '\0') {
        tokens[keys_end] += 8;
        f.program = tokens + keys_end;
        f.program_argc = (int)(count - keys_end);
    }
    if (!(given & KEY_CLUSTER))
        report(p, line, "missing cluster=NAME (every line names its site)");
    /* Given but bad or empty was reported already: do not repeat it.  A
     * running service has its WAN side in its own configuration. */
    if (f.relay && (given & KEY_SERVICE) && (given & (KEY_WAN | KEY_CONNECT)))
        report(p, line,
               "%s= does not go with service= (the service's configuration "
               "says how it reaches its peers)",
               (given & KEY_WAN) ? "wan" : "connect");
    else if (f.relay && !(given & (KEY_WAN | KEY_SERVICE)))
        report(p, line,
               "relay line needs wan=HOST:PORT (the address peer relays "
               "dial), or service=ENDPOINT (a running gridrelay service)");
    return add_line(p, line, &f);
}

/*
 * Read the next line into buf (MF_LINE_MAX + 1 bytes).  Returns 1 with a
 * line, 0 at end of file; *too_long and *has_nul flag lines that cannot be
 * parsed (the rest of a long line is consumed so numbering stays right).
 */
static int read_line(FILE *in, char *buf, bool *too_long, bool *has_nul)
{
    size_t n = 0;
    int c;
    *too_long = false;
    *has_nul = false;
    while ((c = getc(in)) != EOF && c != '\n') {
        if (c == '\0')
            *has_nul = true;
        if (n < MF_LINE_MAX)
            buf[n++] = (char)c;
        else
            *too_long = true;
    }
    buf[n] = '\0';
    return c != EOF || n > 0 || *too_long;
}

void machinefile_free(struct machinefile *mf)
{
    if (mf == NULL)
        return;
    for (uint32_t i = 0; i < mf->site_count; i++) {
        free(mf->sites[i].hosts);
        free(mf->sites[i].program);
    }
    free(mf->sites);
    mf->sites = NULL;
    mf->site_count = 0;
}

int machinefile_load(const char *path, struct machinefile *mf, FILE *errors)
{
    int status = -1;
    struct parser p = {.path = path, .errors = errors, .mf = mf};
    char buf[MF_LINE_MAX + 1];
    bool too_long, has_nul;
    int line = 0;

    memset(mf, 0, sizeof *mf);
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        report(&p, 0, "cannot open machine file: %s", strerror(errno));
        goto cleanup;
    }
    while (read_line(in, buf, &too_long, &has_nul)) {
        line++;
        if (too_long) {
            report(&p, line, "line is longer than %d characters", MF_LINE_MAX);
            continue;
        }
        if (has_nul) {
            report(&p, line, "line contains a NUL byte (not a text file?)");
            continue;
        }
        buf[strcspn(buf, "#")] = '\0';
        if (parse_line(&p, line, buf) != 0) {
            report(&p, line, "out of memory");
            goto cleanup;
        }
    }
    if (ferror(in)) {
        report(&p, line, "read error: %s", strerror(errno));
        goto cleanup;
    }

    if (p.host_lines == 0)
        report(&p, 0, "no hosts");
    const struct mf_site *first_service = NULL, *first_own = NULL;
    for (uint32_t i = 0; i < mf->site_count; i++) {
        const struct mf_site *s = &mf->sites[i];
        if (s->relay_line == 0) {
            report(&p, s->first_line,
                   "site '%s' has no relay (mark one host 'relay')", s->name);
            continue;
        }
        const struct mf_site **first =
            s->relay_names_service ? &first_service : &first_own;
        if (*first == NULL)
            *first = s;
    }
    /* Services know each other; relays gridrun starts know only the
     * relays of their own job. */
    if (first_service != NULL && first_own != NULL) {
        const struct mf_site *later =
            first_service->relay_line > first_own->relay_line ? first_service
                                                              : first_own;
        report(&p, later->relay_line,
               "site '%s' %s but site '%s' (line %d) %s: a job uses running "
               "services at every site or at none",
               later->name,
               later == first_service ? "names a service" : "has no service=",
               later == first_service ? first_own->name : first_service->name,
               later == first_service ? first_own->relay_line
                                      : first_service->relay_line,
               later == first_service ? "has no service=" : "names one");
    }
    if (p.error_count == 0)
        status = 0;

cleanup:
    if (in != NULL)
        fclose(in);
    for (size_t i = 0; i < p.seen_cap; i++)
        free(p.seen[i].name);
    free(p.seen);
    free(p.host_cap);
    if (status != 0)
        machinefile_free(mf);
    return status;
}

int machinefile_distribute(const struct machinefile *mf, uint32_t np,
                           uint32_t *ranks_per_site, char *err, size_t err_len)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < mf->site_count; i++) {
        total += mf->sites[i].total_slots;
        ranks_per_site[i] = 0;
    }
    if (np == 0) {
        if (err != NULL && err_len > 0)
            snprintf(err, err_len, "0 ranks requested (need at least 1)");
        return -1;
    }
    if (np > total) {
        if (err != NULL && err_len > 0)
            snprintf(err, err_len,
                     "%u ranks requested but the machine file has only "
                     "%llu slots",
                     np, (unsigned long long)total);
        return -1;
    }
    uint32_t left = np;
    for (uint32_t i = 0; i < mf->site_count && left > 0; i++) {
        uint32_t take =
            mf->sites[i].total_slots < left ? mf->sites[i].total_slots : left;
        ranks_per_site[i] = take;
        left -= take;
    }
    return 0;
}
