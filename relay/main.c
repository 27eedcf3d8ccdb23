/* gridrelay: the site gateway daemon.  See docs/gridrelay.md. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_log.h"
#include "relay.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gridrelay -c FILE      run the relay with config FILE\n"
        "       gridrelay --check FILE validate FILE and exit (0 = valid)\n"
        "       gridrelay --help       this text and every config key\n"
        "       gridrelay --version\n"
        "\n"
        "Signals: SIGTERM/SIGINT drain queued data and exit 0; SIGHUP "
        "reopens the log file.\n"
        "\nConfiguration keys (libconfig syntax, see docs/gridrelay.md):\n");
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL;
    int check_only = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "c:hV", options, NULL)) != -1) {
        switch (opt) {
        case 'c': config_path = optarg; break;
        case 'k':
            config_path = optarg;
            check_only = 1;
            break;
        case 'h':
            usage(stdout);
            relay_config_print_reference(stdout);
            return 0;
        case 'V': printf("gridrelay %s\n", GRIDCOLL_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (config_path == NULL || optind != argc) {
        usage(stderr);
        return 2;
    }

    static struct relay_config cfg;
    if (relay_config_load(config_path, &cfg, stderr) != 0)
        return 1;
    if (check_only) {
        printf("%s: configuration is valid\n", config_path);
        return 0;
    }

    char ident[96];
    snprintf(ident, sizeof ident, "gridrelay[%s]", cfg.site_name);
    gc_log_init(ident, (enum gc_log_level)gc_log_level_parse(cfg.log_level));
    if (cfg.log_file[0] != '\0' && gc_log_open_file(cfg.log_file) != 0) {
        fprintf(stderr, "gridrelay: cannot open log file '%s'\n", cfg.log_file);
        return 1;
    }

    /* Chunks are up to 16 MiB and live for microseconds to seconds: keep
     * them on the heap instead of a fresh mmap (and page faults) each. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);

    static struct relay relay;
    int status = 1;
    if (relay_init(&relay, &cfg) == 0 && relay_run(&relay) == 0)
        status = 0;
    relay_free(&relay);
    return status;
}
