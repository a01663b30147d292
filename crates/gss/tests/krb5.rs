//! The Kerberos mechanism against a real KDC, with MIT's default enctype order: contexts seal
//! with aes256-cts-hmac-sha1-96 (RFC 3962), checked against MIT's own tokens.

mod common;

use common::cases;

fn realm() {
    common::init("");
}

#[test]
fn every_service_carries_calls_both_ways_and_maps_the_principal() {
    realm();
    cases::every_service_carries_calls_both_ways_and_maps_the_principal("aes256-cts-hmac-sha1-96");
}

#[test]
fn contexts_with_tickets_of_every_aes_service_key_seal_both_ways() {
    realm();
    cases::contexts_with_tickets_of_every_aes_service_key_seal_both_ways();
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
