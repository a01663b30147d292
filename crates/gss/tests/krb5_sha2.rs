//! The Kerberos mechanism against a real KDC, with the SHA-2 enctypes first: contexts seal
//! with aes256-cts-hmac-sha384-192 (RFC 8009), checked against MIT's own tokens.

#[macro_use]
mod common;

realm_tests!(
    " permitted_enctypes = aes256-cts-hmac-sha384-192 aes128-cts-hmac-sha256-128 \
         aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96",
    "aes256-cts-hmac-sha384-192",
    contexts_with_tickets_of_every_aes_service_key_seal_both_ways
);
