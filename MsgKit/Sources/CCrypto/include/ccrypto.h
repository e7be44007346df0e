#ifndef MSG_CCRYPTO_H
#define MSG_CCRYPTO_H
#include <stddef.h>

/* SHA-256 and Ed25519 from the system's libcrypto (OpenSSL 3), opened with
 * dlopen at the first call: a command that hashes nothing does not load it
 * (0.75 ms of start-up measured on this machine). Each function returns 0 on
 * success and -1 when libcrypto cannot be loaded or the call fails;
 * msg_crypto_error() then says why. */

const char *msg_crypto_error(void);
int msg_crypto_load(void);

/* SHA-256 of n bytes into out[32]. */
int msg_sha256(const void *bytes, size_t n, unsigned char *out);

/* A SHA-256 over parts on the calling thread's own context: begin, add each part,
 * end writes the digest. Not nested: one at a time on a thread. */
int msg_sha256_begin(void);
int msg_sha256_add(const void *bytes, size_t n);
int msg_sha256_end(unsigned char *out);

/* A streaming SHA-256: new gives a context (NULL on failure), update adds bytes,
 * final writes the digest and frees the context; free frees one not finished. */
void *msg_sha256_new(void);
int msg_sha256_update(void *ctx, const void *bytes, size_t n);
int msg_sha256_final(void *ctx, unsigned char *out);
void msg_sha256_free(void *ctx);

/* n random bytes from the system's generator. */
int msg_random(unsigned char *out, int n);

/* Ed25519 (RFC 8032): the public key of a 32-byte seed, a 64-byte signature of a
 * message, and its check (0: valid, 1: not valid, -1: could not check). */
int msg_ed25519_public(const unsigned char *seed, unsigned char *pub);
int msg_ed25519_sign(const unsigned char *seed, const void *msg, size_t n, unsigned char *sig);
int msg_ed25519_verify(const unsigned char *pub, const void *msg, size_t n, const unsigned char *sig);

#endif
