/*
 * WAN stream transports (plain TCP, TLS 1.3 with mutual certificate
 * authentication) and the socket options every WAN stream gets.
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
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

const struct transport_ops transport_plain = {
    .name = "plaintext",
    .wrap = plain_wrap,
    .peer_matches = plain_peer_matches,
};

static struct bufferevent *tls_wrap(struct relay *relay, evutil_socket_t fd,
                                    int accepting, const char *peer_name)
{
    SSL *ssl = SSL_new(relay->ssl_ctx);
    if (ssl == NULL)
        return NULL;
    if (!accepting) {
        /* The dialled relay must present a certificate for its site, by
         * name in its subjectAltName: a common name alone does not count
         * (it is free text any CA-signed certificate may carry). */
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
        if (SSL_set1_host(ssl, peer_name) != 1 ||
            SSL_set_tlsext_host_name(ssl, peer_name) != 1) {
            SSL_free(ssl);
            return NULL;
        }
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        relay->base, fd, ssl,
        accepting ? BUFFEREVENT_SSL_ACCEPTING : BUFFEREVENT_SSL_CONNECTING,
        BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* A peer that dies without close_notify is a broken stream, which the
     * link handles by re-sending; no need to treat it as an attack. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    relay_tune_bufferevent(bev);
    return bev;
}

static int tls_peer_matches(struct bufferevent *bev, const char *peer_name)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    if (ssl == NULL)
        return 0;
    X509 *cert = SSL_get0_peer_certificate(ssl);
    return cert != NULL &&
           X509_check_host(cert, peer_name, 0,
                           X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL) == 1;
}

const struct transport_ops transport_tls = {
    .name = "TLS 1.3",
    .wrap = tls_wrap,
    .peer_matches = tls_peer_matches,
};

static void openssl_reason(char *err, size_t err_len, const char *what,
                           const char *path)
{
    char reason[256] = "unknown error";
    unsigned long e = ERR_get_error();
    if (e != 0)
        ERR_error_string_n(e, reason, sizeof reason);
    snprintf(err, err_len, "%s '%s': %s", what, path, reason);
    ERR_clear_error();
}

SSL_CTX *tls_context_new(const char *cert, const char *key, const char *ca,
                         char *err, size_t err_len)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (ctx == NULL) {
        snprintf(err, err_len, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    /* Long-lived bulk streams: no session tickets; AES-128-GCM first, as
     * it is the cheapest suite with AES-NI and just as sound here. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    if (SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:"
                                      "TLS_AES_256_GCM_SHA384:"
                                      "TLS_CHACHA20_POLY1305_SHA256") != 1) {
        openssl_reason(err, err_len, "cipher suites", "TLS 1.3 defaults");
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        openssl_reason(err, err_len, "certificate", cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        openssl_reason(err, err_len, "private key", key);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        openssl_reason(err, err_len, "private key does not match", cert);
        goto fail;
    }
    if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        openssl_reason(err, err_len, "CA", ca);
        goto fail;
    }
    /* Mutual authentication: both ends must show a certificate from our CA. */
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       NULL);
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

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
