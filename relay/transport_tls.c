/*
 * TLS 1.3 with mutual certificate authentication: the WAN transport, and
 * the contexts and connections of the control endpoint's HTTPS.  The one
 * file of the relay that speaks to OpenSSL, so that what the relay asks
 * of TLS is what relay.h declares here.
 */
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"

struct tls_context {
    SSL_CTX *ssl;
};

/* Takes `ssl`: freed with the bufferevent, or here when there is none. */
static struct bufferevent *ssl_bufferevent(struct event_base *base,
                                           evutil_socket_t fd, SSL *ssl,
                                           enum bufferevent_ssl_state state)
{
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, fd, ssl, state, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        SSL_free(ssl);
    return bev;
}

static struct bufferevent *tls_wrap(struct relay *relay, evutil_socket_t fd,
                                    int accepting, const char *peer_name)
{
    SSL *ssl = SSL_new(relay->tls->ssl);
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
    struct bufferevent *bev = ssl_bufferevent(
        relay->base, fd, ssl,
        accepting ? BUFFEREVENT_SSL_ACCEPTING : BUFFEREVENT_SSL_CONNECTING);
    if (bev == NULL)
        return NULL;
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

static int tls_next_failure(struct bufferevent *bev, char *out, size_t len)
{
    unsigned long e;
    while ((e = bufferevent_get_openssl_error(bev)) != 0) {
        /* libevent also queues bare SSL_get_error() codes: not OpenSSL's. */
        if (ERR_GET_LIB(e) == 0)
            continue;
        char reason[256];
        ERR_error_string_n(e, reason, sizeof reason);
        const char *detail = "";
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        if (ssl != NULL && SSL_get_verify_result(ssl) != X509_V_OK)
            detail = X509_verify_cert_error_string(SSL_get_verify_result(ssl));
        snprintf(out, len, "%s%s%s", reason, detail[0] ? ": " : "", detail);
        return 1;
    }
    return 0;
}

const struct transport_ops transport_tls = {
    .name = "TLS 1.3",
    .wrap = tls_wrap,
    .peer_matches = tls_peer_matches,
    .next_failure = tls_next_failure,
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

struct tls_context *tls_context_new(const char *cert, const char *key,
                                    const char *ca, char *err, size_t err_len)
{
    struct tls_context *ctx = calloc(1, sizeof *ctx);
    if (ctx != NULL)
        ctx->ssl = SSL_CTX_new(TLS_method());
    if (ctx == NULL || ctx->ssl == NULL) {
        snprintf(err, err_len, "cannot create a TLS context");
        goto fail;
    }
    SSL_CTX_set_min_proto_version(ctx->ssl, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx->ssl, TLS1_3_VERSION);
    /* Long-lived bulk streams: no session tickets; AES-128-GCM first, as
     * it is the cheapest suite with AES-NI and just as sound here. */
    SSL_CTX_set_options(ctx->ssl, SSL_OP_NO_TICKET);
    if (SSL_CTX_set_ciphersuites(ctx->ssl,
                                 "TLS_AES_128_GCM_SHA256:"
                                 "TLS_AES_256_GCM_SHA384:"
                                 "TLS_CHACHA20_POLY1305_SHA256") != 1) {
        openssl_reason(err, err_len, "cipher suites", "TLS 1.3 defaults");
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx->ssl, cert) != 1) {
        openssl_reason(err, err_len, "certificate", cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx->ssl, key, SSL_FILETYPE_PEM) != 1) {
        openssl_reason(err, err_len, "private key", key);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx->ssl) != 1) {
        openssl_reason(err, err_len, "private key does not match", cert);
        goto fail;
    }
    if (SSL_CTX_load_verify_locations(ctx->ssl, ca, NULL) != 1) {
        openssl_reason(err, err_len, "CA", ca);
        goto fail;
    }
    /* Mutual authentication: both ends must show a certificate from our CA. */
    SSL_CTX_set_verify(ctx->ssl,
                       SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return ctx;
fail:
    tls_context_free(ctx);
    return NULL;
}

void tls_context_name_cas(struct tls_context *ctx, const char *ca)
{
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
    if (names != NULL)
        SSL_CTX_set_client_CA_list(ctx->ssl, names);
}

void tls_context_free(struct tls_context *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl);
    free(ctx);
}

struct bufferevent *tls_accept(struct event_base *base, evutil_socket_t fd,
                               struct tls_context *ctx)
{
    SSL *ssl = SSL_new(ctx->ssl);
    return ssl != NULL
               ? ssl_bufferevent(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING)
               : NULL;
}

int tls_bufferevent(struct bufferevent *bev)
{
    return bufferevent_openssl_get_ssl(bev) != NULL;
}

int tls_peer_common_name(struct bufferevent *bev, char *out, size_t len)
{
    SSL *ssl = bev != NULL ? bufferevent_openssl_get_ssl(bev) : NULL;
    X509 *cert = ssl != NULL ? SSL_get0_peer_certificate(ssl) : NULL;
    if (cert == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
        return -1;
    return X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
                                     NID_commonName, out, (int)len);
}
