//! The Kerberos mechanism against a real KDC, with MIT's default enctype order: contexts seal
//! with aes256-cts-hmac-sha1-96 (RFC 3962), checked against MIT's own tokens.

#[macro_use]
mod common;

realm_tests!(
    "",
    "aes256-cts-hmac-sha1-96",
    contexts_with_tickets_of_every_aes_service_key_seal_both_ways
);
