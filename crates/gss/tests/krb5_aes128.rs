//! The Kerberos mechanism against a real KDC, with aes128-cts-hmac-sha1-96 first: contexts seal
//! with it (RFC 3962), checked against MIT's own tokens (the
//! realm's clients are limited to it and aes256-cts-hmac-sha1-96, so service keys of other
//! enctypes are krb5.rs's and krb5_sha2.rs's).

mod common;

use common::cases;

fn realm() {
    common::init(" permitted_enctypes = aes128-cts-hmac-sha1-96 aes256-cts-hmac-sha1-96");
}

#[test]
fn every_service_carries_calls_both_ways_and_maps_the_principal() {
    realm();
    cases::every_service_carries_calls_both_ways_and_maps_the_principal("aes128-cts-hmac-sha1-96");
}

#[test]
fn replays_tampering_and_forged_handles_are_refused() {
    realm();
    cases::replays_tampering_and_forged_handles_are_refused();
}

#[test]
fn a_full_table_refuses_new_contexts() {
    realm();
    cases::a_full_table_refuses_new_contexts();
}
