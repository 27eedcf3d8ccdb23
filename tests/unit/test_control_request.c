/*
 * Unit test of the registration body parser (relay/control_request.c): the
 * body a tenant sends POST /jobs.  The accepted syntax is checked value by
 * value, every refusal by its exact message and line, and the bodies that
 * made libconfig leak or open files are refused the same way as any other
 * mistake.
 */
#include "control_request.h"

#include "unit_check.h"

#include <stdio.h>
#include <string.h>

#define TOKEN "00112233445566778899aabbccddeeff"

static int parse(const char *text, struct job_request *jr, char *err,
                 size_t err_len)
{
    err[0] = '\0';
    return control_request_parse(text, strlen(text), jr, err, err_len);
}

static void accepted(void)
{
    struct job_request jr;
    char err[256];
    const char *body =
        "# what gridrun sends\n"
        "job_id = 4000000000L;\n"
        "token = \"0011223344556677\" \"8899AABBCCDDEEFF\";\n"
        "lease : 30,\n"
        "/* two sites */ sites = (\n"
        "  { name = \"north-1\"; first_rank = 0; rank_count = 4; },\n"
        "  { rank_count = 0x2; first_rank = 4; name = \"s_2\" }\n"
        "); // done\n";
    CHECK(parse(body, &jr, err, sizeof err) == 0, "refused: %s", err);
    CHECK(jr.id == 4000000000u, "id %u", jr.id);
    static const unsigned char token[] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
                                          0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
                                          0xcc, 0xdd, 0xee, 0xff};
    CHECK(jr.token_len == 16 && memcmp(jr.token, token, 16) == 0,
          "token of %zu bytes", jr.token_len);
    CHECK(jr.lease_s == 30, "lease %u", jr.lease_s);
    CHECK(jr.site_count == 2, "%u sites", jr.site_count);
    CHECK(strcmp(jr.sites[0].name, "north-1") == 0 &&
              jr.sites[0].first_rank == 0 && jr.sites[0].rank_count == 4,
          "site 0: %s %u %u", jr.sites[0].name, jr.sites[0].first_rank,
          jr.sites[0].rank_count);
    CHECK(strcmp(jr.sites[1].name, "s_2") == 0 && jr.sites[1].first_rank == 4 &&
              jr.sites[1].rank_count == 2,
          "site 1: %s %u %u", jr.sites[1].name, jr.sites[1].first_rank,
          jr.sites[1].rank_count);
    CHECK(jr.rank_total == 6, "rank_total %llu",
          (unsigned long long)jr.rank_total);

    /* No lease: 0, the service's default. */
    CHECK(parse("job_id=1;token=\"" TOKEN "\";sites=({name=\"a\";"
                "first_rank=0;rank_count=1;});",
                &jr, err, sizeof err) == 0 &&
              jr.lease_s == 0,
          "without a lease: %s", err);
}

struct refusal {
    const char *body;
    const char *message;
};

static void refused(void)
{
    static char long_string[CONTROL_MAX_BODY];
    snprintf(long_string, sizeof long_string, "job_id = 1 \"%0*d\"", 60000, 0);
    const struct refusal cases[] = {
        {"", "line 1: missing 'job_id'"},
        {"job_id = 3001;\ntoken = 12;",
         "line 2: 'token' must be the job token in hex, 16 to 256 bytes"},
        {"job_id = 1; token = \"abc\";",
         "line 1: 'token' must be the job token in hex, 16 to 256 bytes"},
        {"job_id = 1; token = \"" TOKEN "\";", "line 1: missing 'sites'"},
        {"job_id = 0;", "line 1: 'job_id' = 0 is outside 1..4294967295"},
        {"job_id = 4294967296L;",
         "line 1: 'job_id' = 4294967296 is outside 1..4294967295"},
        {"job_id = 99999999999999999999;", "line 1: an integer too large"},
        {"job_id = 1.5;", "line 1: only whole numbers are taken here"},
        {"job_id = \"1\";", "line 1: 'job_id' must be an integer"},
        {"job_id = 1;\njob_id = 2;", "line 2: 'job_id' given twice (line 1)"},
        {"job_id = 1; owner = \"root\";", "line 1: unknown setting 'owner'"},
        {"job_id = 1 \"s\"", "line 1: a setting name expected"},
        {long_string, "line 1: a string longer than 512 bytes"},
        {"job_id = 1; token = \"abc", "line 1: a string is not closed"},
        {"job_id = 1; /* token", "line 1: a comment is not closed"},
        {"job_id = 1; token = \"\\q\";", "line 1: unknown escape in a string"},
        {"job_id = 1;\n\x01", "line 2: unexpected byte 0x01"},
        {"job_id = 1; [", "line 1: unexpected '['"},
        {"job_id\n1;", "line 2: '=' expected after 'job_id'"},
        {"@include \"/\"\n",
         "line 1: '@' directives (such as @include) are not accepted in a "
         "registration"},
        {"job_id = 1;\ntoken = \"" TOKEN "\";\nsites = ();",
         "line 3: 'sites' must be a list of 1 to 16 groups"},
        {"job_id = 1; token = \"" TOKEN "\"; sites = 3;",
         "line 1: 'sites' must be a list of 1 to 16 groups"},
        {"job_id = 1; token = \"" TOKEN "\";\nsites = ( { name = \"a\";",
         "line 2: a group is not closed"},
        {"job_id = 1; token = \"" TOKEN "\";\nsites = ( { first_rank = 0; "
         "rank_count = 1; } );",
         "line 2: sites[0] needs a name of 1 to 63 letters, digits, '_' or "
         "'-'"},
        {"job_id = 1; token = \"" TOKEN "\";\nsites = ( { name = \"a b\"; "
         "first_rank = 0; rank_count = 1; } );",
         "line 2: sites[0] needs a name of 1 to 63 letters, digits, '_' or "
         "'-'"},
        {"job_id = 1; token = \"" TOKEN "\";\nsites = ( { name = \"a\"; "
         "rank_count = 1; } );",
         "line 2: missing 'first_rank'"},
        {"job_id = 1; token = \"" TOKEN "\"; sites = ( { name = \"a\"; "
         "first_rank = 0; rank_count = 0; } );",
         "line 1: 'rank_count' = 0 is outside 1..16777216"},
        {"job_id = 1; token = \"" TOKEN "\"; sites = ( { name = \"a\"; "
         "first_rank = 0; rank_count = 2; }, { name = \"b\"; first_rank = 1; "
         "rank_count = 1; } );",
         "sites: names must differ and rank ranges must not overlap or pass "
         "rank 16777215"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct job_request jr;
        char err[256];
        int rc = parse(cases[i].body, &jr, err, sizeof err);
        CHECK(rc == -1 && strcmp(err, cases[i].message) == 0,
              "case %zu: rc %d, \"%s\", expected \"%s\"", i, rc, err,
              cases[i].message);
    }
    /* 17 sites: one more than a JOB frame carries. */
    char body[4096];
    int n = snprintf(body, sizeof body,
                     "job_id = 1; token = \"" TOKEN "\"; sites = (");
    for (int i = 0; i < 17; i++)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "%s{ name = \"s%d\"; first_rank = %d; rank_count = 1; }",
                      i ? ", " : "", i, i);
    snprintf(body + n, sizeof body - (size_t)n, ");");
    struct job_request jr;
    char err[256];
    CHECK(parse(body, &jr, err, sizeof err) == -1 &&
              strcmp(err, "line 1: 'sites' must be a list of 1 to 16 groups") ==
                  0,
          "17 sites: %s", err);
    /* A NUL inside the body and one byte past the limit. */
    CHECK(control_request_parse("job_id = 1;\0x", 13, &jr, err, sizeof err) ==
                  -1 &&
              strcmp(err, "the body is not text") == 0,
          "NUL: %s", err);
    CHECK(control_request_parse(long_string, CONTROL_MAX_BODY + 1, &jr, err,
                                sizeof err) == -1 &&
              strcmp(err, "the body has 65537 bytes, more than 65536") == 0,
          "too long: %s", err);
}

int main(void)
{
    accepted();
    refused();
    return unit_check_report("control_request: ");
}
