#include "ccrypto.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* OpenSSL 3's names for what is used here (openssl/evp.h), declared by hand so the
 * build needs no headers: the library is found at run time. */
#define NID_ED25519 1087

static struct {
    void *(*md_fetch)(void *, const char *, const char *);
    void *(*md_ctx_new)(void);
    void (*md_ctx_free)(void *);
    int (*digest_init)(void *, const void *, void *);
    int (*digest_update)(void *, const void *, size_t);
    int (*digest_final)(void *, unsigned char *, unsigned int *);
    int (*rand_bytes)(unsigned char *, int);
    void *(*pkey_private)(int, void *, const unsigned char *, size_t);
    void *(*pkey_public)(int, void *, const unsigned char *, size_t);
    int (*pkey_get_public)(const void *, unsigned char *, size_t *);
    void (*pkey_free)(void *);
    int (*sign_init)(void *, void **, const void *, void *, void *);
    int (*sign)(void *, unsigned char *, size_t *, const unsigned char *, size_t);
    int (*verify_init)(void *, void **, const void *, void *, void *);
    int (*verify)(void *, const unsigned char *, size_t, const unsigned char *, size_t);
} f;

static void *sha256_md;
/* Each thread's context for one-shot digests, made at its first and kept for the
 * thread's life (msg's threads live as long as the process). */
static __thread void *thread_ctx;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = -1;
static char error[256] = "libcrypto was not loaded";

static void *sym(void *lib, const char *name, int *ok) {
    void *p = dlsym(lib, name);
    if (!p && *ok) {
        snprintf(error, sizeof error, "libcrypto.so.3 has no %s", name);
        *ok = 0;
    }
    return p;
}

static void load(void) {
    void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(error, sizeof error, "cannot load libcrypto.so.3 (OpenSSL 3, Debian's libssl3): %s", dlerror());
        return;
    }
    int ok = 1;
    f.md_fetch = sym(lib, "EVP_MD_fetch", &ok);
    f.md_ctx_new = sym(lib, "EVP_MD_CTX_new", &ok);
    f.md_ctx_free = sym(lib, "EVP_MD_CTX_free", &ok);
    f.digest_init = sym(lib, "EVP_DigestInit_ex", &ok);
    f.digest_update = sym(lib, "EVP_DigestUpdate", &ok);
    f.digest_final = sym(lib, "EVP_DigestFinal_ex", &ok);
    f.rand_bytes = sym(lib, "RAND_bytes", &ok);
    f.pkey_private = sym(lib, "EVP_PKEY_new_raw_private_key", &ok);
    f.pkey_public = sym(lib, "EVP_PKEY_new_raw_public_key", &ok);
    f.pkey_get_public = sym(lib, "EVP_PKEY_get_raw_public_key", &ok);
    f.pkey_free = sym(lib, "EVP_PKEY_free", &ok);
    f.sign_init = sym(lib, "EVP_DigestSignInit", &ok);
    f.sign = sym(lib, "EVP_DigestSign", &ok);
    f.verify_init = sym(lib, "EVP_DigestVerifyInit", &ok);
    f.verify = sym(lib, "EVP_DigestVerify", &ok);
    /* SHA-256 fetched once: a digest by name (SHA256(), EVP_sha256()) is looked up
     * under a lock at every call in OpenSSL 3. */
    if (ok && !(sha256_md = f.md_fetch(NULL, "SHA256", NULL))) {
        snprintf(error, sizeof error, "libcrypto.so.3 has no SHA-256");
        ok = 0;
    }
    loaded = ok ? 1 : 0;
}

const char *msg_crypto_error(void) { return error; }

int msg_crypto_load(void) {
    pthread_once(&once, load);
    return loaded == 1 ? 0 : -1;
}

int msg_sha256(const void *bytes, size_t n, unsigned char *out) {
    if (msg_crypto_load() != 0) return -1;
    if (!thread_ctx && !(thread_ctx = f.md_ctx_new())) return -1;
    unsigned int len = 0;
    if (f.digest_init(thread_ctx, sha256_md, NULL) != 1 || f.digest_update(thread_ctx, bytes, n) != 1
        || f.digest_final(thread_ctx, out, &len) != 1 || len != 32) return -1;
    return 0;
}

int msg_sha256_begin(void) {
    if (msg_crypto_load() != 0) return -1;
    if (!thread_ctx && !(thread_ctx = f.md_ctx_new())) return -1;
    return f.digest_init(thread_ctx, sha256_md, NULL) == 1 ? 0 : -1;
}

int msg_sha256_add(const void *bytes, size_t n) {
    return f.digest_update(thread_ctx, bytes, n) == 1 ? 0 : -1;
}

int msg_sha256_end(unsigned char *out) {
    unsigned int len = 0;
    return f.digest_final(thread_ctx, out, &len) == 1 && len == 32 ? 0 : -1;
}

void *msg_sha256_new(void) {
    if (msg_crypto_load() != 0) return NULL;
    void *ctx = f.md_ctx_new();
    if (!ctx) return NULL;
    if (f.digest_init(ctx, sha256_md, NULL) != 1) {
        f.md_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

int msg_sha256_update(void *ctx, const void *bytes, size_t n) {
    return f.digest_update(ctx, bytes, n) == 1 ? 0 : -1;
}

int msg_sha256_final(void *ctx, unsigned char *out) {
    unsigned int len = 0;
    int ok = f.digest_final(ctx, out, &len) == 1 && len == 32;
    f.md_ctx_free(ctx);
    return ok ? 0 : -1;
}

void msg_sha256_free(void *ctx) {
    if (ctx) f.md_ctx_free(ctx);
}

int msg_random(unsigned char *out, int n) {
    if (msg_crypto_load() != 0) return -1;
    return f.rand_bytes(out, n) == 1 ? 0 : -1;
}

int msg_ed25519_public(const unsigned char *seed, unsigned char *pub) {
    if (msg_crypto_load() != 0) return -1;
    void *key = f.pkey_private(NID_ED25519, NULL, seed, 32);
    if (!key) return -1;
    size_t len = 32;
    int ok = f.pkey_get_public(key, pub, &len) == 1 && len == 32;
    f.pkey_free(key);
    return ok ? 0 : -1;
}

int msg_ed25519_sign(const unsigned char *seed, const void *msg, size_t n, unsigned char *sig) {
    if (msg_crypto_load() != 0) return -1;
    void *key = f.pkey_private(NID_ED25519, NULL, seed, 32);
    if (!key) return -1;
    void *ctx = f.md_ctx_new();
    size_t len = 64;
    int ok = ctx && f.sign_init(ctx, NULL, NULL, NULL, key) == 1 && f.sign(ctx, sig, &len, msg, n) == 1 && len == 64;
    if (ctx) f.md_ctx_free(ctx);
    f.pkey_free(key);
    return ok ? 0 : -1;
}

int msg_ed25519_verify(const unsigned char *pub, const void *msg, size_t n, const unsigned char *sig) {
    if (msg_crypto_load() != 0) return -1;
    void *key = f.pkey_public(NID_ED25519, NULL, pub, 32);
    if (!key) return -1;
    void *ctx = f.md_ctx_new();
    if (!ctx) {
        f.pkey_free(key);
        return -1;
    }
    int result = -1;
    if (f.verify_init(ctx, NULL, NULL, NULL, key) == 1) result = f.verify(ctx, sig, 64, msg, n) == 1 ? 0 : 1;
    f.md_ctx_free(ctx);
    f.pkey_free(key);
    return result;
}
