/*
 * The plaintext WAN transport and the socket options every WAN stream gets
 * (TLS 1.3: transport_tls.c).
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "relay.h"

static struct bufferevent *plain_wrap(struct relay *relay, evutil_socket_t fd,
                                      int accepting, const char *peer_name)
{
    (void)accepting;
    (void)peer_name;
    struct bufferevent *bev =
        bufferevent_socket_new(relay->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev != NULL)
        relay_tune_bufferevent(bev);
    return bev;
}

static int plain_peer_matches(struct bufferevent *bev, const char *peer_name)
{
    (void)bev;
    (void)peer_name;
    return 1; /* only the job token vouches for a plaintext peer */
}

static int plain_next_failure(struct bufferevent *bev, char *out, size_t len)
{
    (void)bev;
    (void)out;
    (void)len;
    return 0; /* the socket's error is all there is */
}

const struct transport_ops transport_plain = {
    .name = "plaintext",
    .wrap = plain_wrap,
    .peer_matches = plain_peer_matches,
    .next_failure = plain_next_failure,
};

int tune_wan_socket(const struct relay_config *cfg, evutil_socket_t fd,
                    char *err, size_t err_len)
{
    int one = 1;
    int nodelay = cfg->tcp_nodelay;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay)) {
        snprintf(err, err_len, "TCP_NODELAY: %s", strerror(errno));
        return -1;
    }
    if (cfg->tcp_congestion[0] != '\0' &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cfg->tcp_congestion,
                   (socklen_t)strlen(cfg->tcp_congestion)) != 0) {
        snprintf(err, err_len, "congestion control '%s': %s",
                 cfg->tcp_congestion, strerror(errno));
        return -1;
    }
    int size;
    if (cfg->tcp_sndbuf != 0) {
        size = (int)cfg->tcp_sndbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size) != 0) {
            snprintf(err, err_len, "SO_SNDBUF: %s", strerror(errno));
            return -1;
        }
    }
    if (cfg->tcp_rcvbuf != 0) {
        size = (int)cfg->tcp_rcvbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) != 0) {
            snprintf(err, err_len, "SO_RCVBUF: %s", strerror(errno));
            return -1;
        }
    }
    if (cfg->tcp_notsent_lowat != 0) {
        int lowat = (int)cfg->tcp_notsent_lowat;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat,
                       sizeof lowat) != 0) {
            snprintf(err, err_len, "TCP_NOTSENT_LOWAT: %s", strerror(errno));
            return -1;
        }
    }
    if (cfg->tcp_keepalive) {
        int idle = (int)cfg->tcp_keepalive_idle_s;
        if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0 ||
            setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) !=
                0) {
            snprintf(err, err_len, "keepalive: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}
