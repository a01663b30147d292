//! A Kerberos realm for the RPCSEC_GSS tests: a real KDC (Debian's krb5-kdc) started once per
//! test binary under a temporary directory, the server's key in a keytab rnfsd is given, and
//! users' keys in the client keytab this process takes its tickets from.

use std::path::PathBuf;
use std::sync::OnceLock;

use gss::kdc::Kdc;

/// Principals with keys in the client keytab: local users that exist in every passwd
/// (daemon is uid 1, bin uid 2, root uid 0) and one that exists nowhere.
pub const USERS: [&str; 4] = ["daemon", "bin", "root", "stranger"];

/// A client host's service principal, with its key in the client keytab: NFSv4.0 clients
/// that introduce themselves as it are called back under RPCSEC_GSS, by a callback service
/// of this process that accepts with that keytab (`KRB5_KTNAME`).
pub const CLIENT_HOST: &str = "nfs/cbclient";

/// Another name of the server, with a key in its keytab after nfs/localhost's (as a server
/// has one per network name).
pub const SERVER_ALIAS: &str = "nfs/alias";

/// The realm shared by a test binary.
pub struct Realm {
    kdc: Kdc,
    /// The keytab with nfs/localhost's and nfs/alias's keys, for `rnfsd --keytab`.
    pub server_keytab: PathBuf,
    /// The keytab the users' tickets come from.
    pub client_keytab: PathBuf,
}

impl Realm {
    /// The KDC.
    pub fn kdc(&self) -> &Kdc {
        &self.kdc
    }
}

/// The realm, started on first use; this process (and the rnfsd processes it starts) use it
/// from then on.
pub fn realm() -> &'static Realm {
    static R: OnceLock<Realm> = OnceLock::new();
    R.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rnfs-krb5-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("realm directory");
        // SHA-2 enctypes first (RFC 8009): the contexts of these tests seal with
        // aes256-cts-hmac-sha384-192, crates/gss's tests with MIT's default first choice,
        // aes256-cts-hmac-sha1-96
        let kdc = Kdc::start_with(
            &dir,
            " permitted_enctypes = aes256-cts-hmac-sha384-192 aes128-cts-hmac-sha256-128 \
             aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96",
        )
        .expect("start the KDC");
        let server_keytab = dir.join("server.keytab");
        let client_keytab = dir.join("client.keytab");
        kdc.add("nfs/localhost", &server_keytab)
            .expect("service principal");
        kdc.add(SERVER_ALIAS, &server_keytab)
            .expect("service principal");
        for u in USERS.into_iter().chain([CLIENT_HOST]) {
            kdc.add(u, &client_keytab).expect("user principal");
        }
        // Set once, before any GSS-API call of this process and before rnfsd starts (which
        // takes its own keytab from --keytab).
        for (k, v) in kdc.env(&client_keytab) {
            std::env::set_var(k, v);
        }
        std::env::set_var("KRB5_KTNAME", &client_keytab);
        Realm {
            kdc,
            server_keytab,
            client_keytab,
        }
    })
}

/// The rnfsd arguments that make it accept contexts with the realm's service key.
pub fn server_args() -> Vec<String> {
    vec![
        "--keytab".into(),
        realm().server_keytab.display().to_string(),
    ]
}
