/*
 * Parsing what launchers send the control endpoint (control_request.h).
 *
 * A registration body is written in the subset of the configuration's
 * syntax (libconfig's) that a registration needs, so errors name a line:
 *
 *   job_id = 4021L; token = "<hex>"; lease = 30;
 *   sites = ( { name = "north"; first_rank = 0; rank_count = 4; }, ... );
 *
 * It is read by the small parser below, not by libconfig: the body comes
 * from a tenant, and libconfig 1.5 cannot take hostile text.  Its @include
 * has no switch (a directory made the parser exit the process, a FIFO
 * blocked the loop, the answer told whether a file exists), and its
 * grammar leaks the token it fails on (a 60 KB string after a complete
 * value leaked 60 KB per request: 1 GB in 17 000 requests).  This parser
 * allocates nothing, reads each byte once, bounds every token, and knows
 * only the settings of a registration.
 *
 * Grammar (`;` or `,` may follow a setting; comments: #, // and C-style):
 *
 *   body    := setting*
 *   setting := NAME ('=' | ':') value [';' | ',']
 *   value   := INTEGER | STRING+ | '(' [group (',' group)*] ')'
 *   group   := '{' setting* '}'
 *
 * INTEGER is decimal or 0x hex with an optional sign and L/LL suffix;
 * STRING is double-quoted with the escapes \\ \" \n \r \t \f \xHH, and
 * adjacent strings join, as in libconfig.
 */
#include "control_request.h"

#include <stdio.h>
#include <string.h>

/* The longest string a registration holds: the token, in hex. */
#define TEXT_MAX (2 * GC_TOKEN_MAX)

enum tok_kind { TOK_END, TOK_NAME, TOK_INT, TOK_STRING, TOK_PUNCT };

struct tok {
    enum tok_kind kind;
    int line;
    char punct;       /* TOK_PUNCT */
    long long number; /* TOK_INT */
    char text[TEXT_MAX + 1];
    size_t len; /* TOK_NAME, TOK_STRING */
};

struct parser {
    const char *p, *end;
    int line;
    struct tok tok; /* the next token */
    char *err;
    size_t err_len;
};

static int fail(struct parser *ps, int line, const char *what)
{
    snprintf(ps->err, ps->err_len, "line %d: %s", line, what);
    return -1;
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int is_name_char(int c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '-'));
}

/* Blanks and comments before the next token. */
static int skip_blanks(struct parser *ps)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n') {
            ps->line++;
            ps->p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
                   c == '\v') {
            ps->p++;
        } else if (c == '#' ||
                   (c == '/' && ps->end - ps->p > 1 && ps->p[1] == '/')) {
            while (ps->p < ps->end && *ps->p != '\n')
                ps->p++;
        } else if (c == '/' && ps->end - ps->p > 1 && ps->p[1] == '*') {
            int line = ps->line;
            for (ps->p += 2;; ps->p++) {
                if (ps->end - ps->p < 2)
                    return fail(ps, line, "a comment is not closed");
                if (ps->p[0] == '*' && ps->p[1] == '/')
                    break;
                ps->line += *ps->p == '\n';
            }
            ps->p += 2;
        } else {
            break;
        }
    }
    return 0;
}

static int lex_string(struct parser *ps, struct tok *t)
{
    for (ps->p++;; ps->p++) {
        if (ps->p == ps->end)
            return fail(ps, t->line, "a string is not closed");
        int c = (unsigned char)*ps->p;
        if (c == '"')
            break;
        if (c == '\n')
            ps->line++;
        if (c == '\\') {
            if (++ps->p == ps->end)
                return fail(ps, t->line, "a string is not closed");
            switch (*ps->p) {
            case '\\': c = '\\'; break;
            case '"': c = '"'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'f': c = '\f'; break;
            case 'x': {
                int hi = ps->end - ps->p > 2 ? hex_value(ps->p[1]) : -1;
                int lo = hi >= 0 ? hex_value(ps->p[2]) : -1;
                if (lo < 0)
                    return fail(ps, ps->line, "\\x needs two hex digits");
                c = hi << 4 | lo;
                ps->p += 2;
                break;
            }
            default: return fail(ps, ps->line, "unknown escape in a string");
            }
        }
        if (t->len == TEXT_MAX) {
            snprintf(ps->err, ps->err_len,
                     "line %d: a string longer than %d bytes", t->line,
                     TEXT_MAX);
            return -1;
        }
        t->text[t->len++] = (char)c;
    }
    ps->p++;
    t->text[t->len] = '\0';
    return 0;
}

static int lex_integer(struct parser *ps, struct tok *t)
{
    int negative = 0;
    if (*ps->p == '-' || *ps->p == '+')
        negative = *ps->p++ == '-';
    int base = 10;
    if (ps->end - ps->p > 1 && ps->p[0] == '0' &&
        (ps->p[1] == 'x' || ps->p[1] == 'X')) {
        base = 16;
        ps->p += 2;
    }
    /* Anything past 2^63 - 1 is outside every range a registration has. */
    unsigned long long value = 0;
    const char *digits = ps->p;
    int d;
    while (ps->p < ps->end && (d = hex_value(*ps->p)) >= 0 && d < base) {
        if (value > (0x7fffffffffffffffULL - (unsigned)d) / (unsigned)base)
            return fail(ps, t->line, "an integer too large");
        value = value * (unsigned)base + (unsigned)d;
        ps->p++;
    }
    if (ps->p == digits)
        return fail(ps, t->line, "a sign or 0x without digits");
    for (int i = 0; i < 2 && ps->p < ps->end && *ps->p == 'L'; i++)
        ps->p++;
    if (ps->p < ps->end && (is_name_char(*ps->p, 0) || *ps->p == '.'))
        return fail(ps, t->line, "only whole numbers are taken here");
    t->number = negative ? -(long long)value : (long long)value;
    return 0;
}

/* Read the next token into ps->tok. */
static int next(struct parser *ps)
{
    struct tok *t = &ps->tok;
    if (skip_blanks(ps) != 0)
        return -1;
    t->line = ps->line;
    t->len = 0;
    if (ps->p == ps->end) {
        t->kind = TOK_END;
        return 0;
    }
    char c = *ps->p;
    if (c == '"') {
        t->kind = TOK_STRING;
        return lex_string(ps, t);
    }
    if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
        t->kind = TOK_INT;
        return lex_integer(ps, t);
    }
    if (is_name_char(c, 1)) {
        t->kind = TOK_NAME;
        while (ps->p < ps->end && is_name_char(*ps->p, 0)) {
            if (t->len == GC_NAME_MAX)
                return fail(ps, t->line, "a setting name too long");
            t->text[t->len++] = *ps->p++;
        }
        t->text[t->len] = '\0';
        return 0;
    }
    if (strchr("=:;,(){}", c) != NULL) {
        t->kind = TOK_PUNCT;
        t->punct = c;
        ps->p++;
        return 0;
    }
    if (c >= 0x20 && c < 0x7f)
        snprintf(ps->err, ps->err_len, "line %d: unexpected '%c'", t->line, c);
    else
        snprintf(ps->err, ps->err_len, "line %d: unexpected byte 0x%02x",
                 t->line, (unsigned char)c);
    return -1;
}

static int is_punct(const struct parser *ps, char c)
{
    return ps->tok.kind == TOK_PUNCT && ps->tok.punct == c;
}

/* The settings a group holds: each seen at most once. */
struct setting_def {
    const char *name;
    enum tok_kind kind; /* TOK_INT, TOK_STRING, or TOK_PUNCT for the list */
    long long min, max; /* integers */
};

enum { SITE_NAME, SITE_FIRST_RANK, SITE_RANK_COUNT, SITE_KEYS };
static const struct setting_def site_keys[SITE_KEYS] = {
    [SITE_NAME] = {"name", TOK_STRING, 0, 0},
    [SITE_FIRST_RANK] = {"first_rank", TOK_INT, 0, GC_MAX_RANK},
    [SITE_RANK_COUNT] = {"rank_count", TOK_INT, 1, (long long)GC_MAX_RANK + 1},
};

enum { KEY_JOB_ID, KEY_TOKEN, KEY_LEASE, KEY_SITES, BODY_KEYS };
static const struct setting_def body_keys[BODY_KEYS] = {
    [KEY_JOB_ID] = {"job_id", TOK_INT, 1, UINT32_MAX},
    [KEY_TOKEN] = {"token", TOK_STRING, 0, 0},
    [KEY_LEASE] = {"lease", TOK_INT, 1, 86400},
    [KEY_SITES] = {"sites", TOK_PUNCT, 0, 0},
};

/* What one setting said: its line (0 when absent) and value. */
struct setting_value {
    int line;
    long long number;
    char text[TEXT_MAX + 1];
    size_t len;
};

static int parse_sites(struct parser *ps, struct job_request *jr);

static int token_error(struct parser *ps, int line)
{
    snprintf(ps->err, ps->err_len,
             "line %d: 'token' must be the job token in hex, 16 to %d bytes",
             line, GC_TOKEN_MAX);
    return -1;
}

/*
 * One setting of `defs` at ps->tok (a name); its value goes to
 * values[index].  The sites list is parsed in place into `jr`.
 */
static int parse_setting(struct parser *ps, const struct setting_def *defs,
                         size_t ndefs, struct setting_value *values,
                         struct job_request *jr)
{
    const struct tok *t = &ps->tok;
    int line = t->line;
    if (t->kind != TOK_NAME)
        return fail(ps, line, "a setting name expected");
    size_t k = 0;
    while (k < ndefs && strcmp(defs[k].name, t->text) != 0)
        k++;
    if (k == ndefs) {
        snprintf(ps->err, ps->err_len, "line %d: unknown setting '%s'", line,
                 t->text);
        return -1;
    }
    struct setting_value *v = &values[k];
    if (v->line != 0) {
        snprintf(ps->err, ps->err_len, "line %d: '%s' given twice (line %d)",
                 line, defs[k].name, v->line);
        return -1;
    }
    v->line = line;
    if (next(ps) != 0)
        return -1;
    if (!is_punct(ps, '=') && !is_punct(ps, ':')) {
        snprintf(ps->err, ps->err_len, "line %d: '=' expected after '%s'",
                 t->line, defs[k].name);
        return -1;
    }
    if (next(ps) != 0)
        return -1;
    if (defs[k].kind == TOK_PUNCT) {
        if (parse_sites(ps, jr) != 0)
            return -1;
    } else if (defs[k].kind == TOK_STRING) {
        if (t->kind != TOK_STRING)
            goto wrong_type;
        while (t->kind == TOK_STRING) { /* "a" "b" is "ab" */
            if (v->len + t->len > TEXT_MAX) {
                snprintf(ps->err, ps->err_len,
                         "line %d: a string longer than %d bytes", line,
                         TEXT_MAX);
                return -1;
            }
            memcpy(v->text + v->len, t->text, t->len);
            v->len += t->len;
            v->text[v->len] = '\0';
            if (next(ps) != 0)
                return -1;
        }
    } else {
        if (t->kind != TOK_INT)
            goto wrong_type;
        v->number = t->number;
        if (v->number < defs[k].min || v->number > defs[k].max) {
            snprintf(ps->err, ps->err_len,
                     "line %d: '%s' = %lld is outside %lld..%lld", line,
                     defs[k].name, v->number, defs[k].min, defs[k].max);
            return -1;
        }
        if (next(ps) != 0)
            return -1;
    }
    if (is_punct(ps, ';') || is_punct(ps, ','))
        return next(ps);
    return 0;
wrong_type:
    if (defs == body_keys && k == KEY_TOKEN)
        return token_error(ps, line);
    snprintf(ps->err, ps->err_len, "line %d: '%s' must be %s", line,
             defs[k].name,
             defs[k].kind == TOK_INT ? "an integer" : "a quoted string");
    return -1;
}

static int missing(struct parser *ps, int line, const char *name)
{
    snprintf(ps->err, ps->err_len, "line %d: missing '%s'", line, name);
    return -1;
}

static int valid_name(const char *name, size_t len)
{
    return len > 0 && len <= GC_NAME_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_-") == len;
}

/* '(' group, ... ')' at ps->tok, into jr->sites. */
static int parse_sites(struct parser *ps, struct job_request *jr)
{
    int line = ps->tok.line;
    if (!is_punct(ps, '('))
        goto not_a_list;
    if (next(ps) != 0)
        return -1;
    while (!is_punct(ps, ')')) {
        if (jr->site_count == GC_JOB_SITES_MAX || !is_punct(ps, '{'))
            goto not_a_list;
        int group_line = ps->tok.line;
        struct setting_value values[SITE_KEYS] = {0};
        if (next(ps) != 0)
            return -1;
        while (!is_punct(ps, '}')) {
            if (ps->tok.kind == TOK_END)
                return fail(ps, group_line, "a group is not closed");
            if (parse_setting(ps, site_keys, SITE_KEYS, values, jr) != 0)
                return -1;
        }
        struct gc_job_site *site = &jr->sites[jr->site_count];
        if (!valid_name(values[SITE_NAME].text, values[SITE_NAME].len)) {
            snprintf(ps->err, ps->err_len,
                     "line %d: sites[%u] needs a name of 1 to %u letters, "
                     "digits, '_' or '-'",
                     group_line, jr->site_count, GC_NAME_MAX);
            return -1;
        }
        for (int k = SITE_FIRST_RANK; k <= SITE_RANK_COUNT; k++)
            if (values[k].line == 0)
                return missing(ps, group_line, site_keys[k].name);
        memcpy(site->name, values[SITE_NAME].text, values[SITE_NAME].len + 1);
        site->first_rank = (uint32_t)values[SITE_FIRST_RANK].number;
        site->rank_count = (uint32_t)values[SITE_RANK_COUNT].number;
        jr->rank_total += site->rank_count;
        jr->site_count++;
        if (next(ps) != 0) /* past '}' */
            return -1;
        if (is_punct(ps, ','))
            if (next(ps) != 0)
                return -1;
    }
    if (jr->site_count == 0)
        goto not_a_list;
    return next(ps);
not_a_list:
    snprintf(ps->err, ps->err_len,
             "line %d: 'sites' must be a list of 1 to %u groups", line,
             GC_JOB_SITES_MAX);
    return -1;
}

/* The wire format's own rules: distinct names, disjoint ranges. */
static int check_sites(const struct job_request *jr, char *err, size_t err_len)
{
    struct gc_job_frame probe = {.op = GC_JOB_ANNOUNCE,
                                 .site_count = (uint8_t)jr->site_count};
    memcpy(probe.sites, jr->sites, sizeof jr->sites);
    uint8_t scratch[GC_MAX_CONTROL_PAYLOAD];
    if (gc_job_frame_encode(&probe, scratch, sizeof scratch) == 0) {
        snprintf(err, err_len,
                 "sites: names must differ and rank ranges must not overlap "
                 "or pass rank %u",
                 GC_MAX_RANK);
        return -1;
    }
    return 0;
}

static int parse_token(const struct setting_value *v, struct job_request *jr)
{
    if (v->len < 32 || v->len % 2 != 0 || v->len / 2 > sizeof jr->token)
        return -1;
    for (size_t i = 0; i < v->len / 2; i++) {
        int hi = hex_value(v->text[2 * i]), lo = hex_value(v->text[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        jr->token[i] = (uint8_t)(hi << 4 | lo);
    }
    jr->token_len = v->len / 2;
    return 0;
}

/* The line of the first '@', or 0 when there is none. */
static int directive_line(const char *text, size_t len)
{
    const char *at = memchr(text, '@', len);
    if (at == NULL)
        return 0;
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

int control_request_parse(const char *text, size_t len, struct job_request *jr,
                          char *err, size_t err_len)
{
    struct parser ps = {.p = text,
                        .end = text + len,
                        .line = 1,
                        .err = err,
                        .err_len = err_len};
    struct setting_value values[BODY_KEYS] = {0};
    int line;
    memset(jr, 0, sizeof *jr);
    if (len > CONTROL_MAX_BODY) {
        snprintf(err, err_len, "the body has %zu bytes, more than %d", len,
                 CONTROL_MAX_BODY);
        return -1;
    }
    if (memchr(text, '\0', len) != NULL) {
        snprintf(err, err_len, "the body is not text");
        return -1;
    }
    /* A registration needs no '@'; one is most likely an @include, which
     * this parser would not follow either: say so. */
    if ((line = directive_line(text, len)) != 0) {
        snprintf(err, err_len,
                 "line %d: '@' directives (such as @include) are not "
                 "accepted in a registration",
                 line);
        return -1;
    }
    if (next(&ps) != 0)
        return -1;
    while (ps.tok.kind != TOK_END)
        if (parse_setting(&ps, body_keys, BODY_KEYS, values, jr) != 0)
            return -1;
    if (values[KEY_JOB_ID].line == 0)
        return missing(&ps, ps.line, "job_id");
    jr->id = (uint32_t)values[KEY_JOB_ID].number;
    if (values[KEY_TOKEN].line == 0)
        return missing(&ps, ps.line, "token");
    if (parse_token(&values[KEY_TOKEN], jr) != 0)
        return token_error(&ps, values[KEY_TOKEN].line);
    jr->lease_s = (uint32_t)values[KEY_LEASE].number;
    if (values[KEY_SITES].line == 0)
        return missing(&ps, ps.line, "sites");
    return check_sites(jr, err, err_len);
}

enum control_route control_route_parse(const char *path, uint32_t *id)
{
    static const struct {
        const char *path;
        enum control_route route;
    } fixed[] = {
        {"/jobs", ROUTE_JOBS},
        {"/status", ROUTE_STATUS},
        {"/metrics", ROUTE_METRICS},
    };
    if (path == NULL)
        return ROUTE_NONE;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (strcmp(path, fixed[i].path) == 0)
            return fixed[i].route;
    if (strncmp(path, "/jobs/", 6) != 0)
        return ROUTE_NONE;
    /* Decimal digits only: no sign, no blanks, nothing past 2^32 - 1. */
    uint64_t value = 0;
    const char *p = path + 6;
    for (; *p >= '0' && *p <= '9'; p++) {
        value = value * 10 + (uint64_t)(*p - '0');
        if (value > UINT32_MAX)
            return ROUTE_NONE;
    }
    if (p == path + 6)
        return ROUTE_NONE;
    *id = (uint32_t)value;
    if (*p == '\0')
        return ROUTE_JOB;
    return strcmp(p, "/renew") == 0 ? ROUTE_RENEW : ROUTE_NONE;
}
