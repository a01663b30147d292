//! The Kerberos mechanism against a real KDC, with aes128-cts-hmac-sha1-96 first: contexts seal
//! with it (RFC 3962), checked against MIT's own tokens (the
//! realm's clients are limited to it and aes256-cts-hmac-sha1-96, so service keys of other
//! enctypes are krb5.rs's and krb5_sha2.rs's).

#[macro_use]
mod common;

realm_tests!(
    " permitted_enctypes = aes128-cts-hmac-sha1-96 aes256-cts-hmac-sha1-96",
    "aes128-cts-hmac-sha1-96"
);
