//! Human-readable tables of the answers, what `rnfsctl` prints without `--json`.

use std::fmt::Write;

use crate::Response;

/// Columns padded to their widest cell; the last column is not padded.
fn columns(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<&str> = cells.collect();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                let _ = write!(out, "{c:<w$}  ", w = width[i]);
            }
        }
        out.push('\n');
    };
    line(&mut out, &mut head.iter().copied());
    for r in rows {
        line(&mut out, &mut r.iter().map(String::as_str));
    }
    out
}

/// The answer as text for a terminal.
pub fn render(resp: &Response) -> String {
    match resp {
        Response::Exports { exports } => {
            let rows: Vec<Vec<String>> = exports
                .iter()
                .flat_map(|e| {
                    e.rules.iter().enumerate().map(move |(i, (client, opts))| {
                        let first = i == 0;
                        vec![
                            if first { e.path.clone() } else { String::new() },
                            if first {
                                e.fsid.to_string()
                            } else {
                                String::new()
                            },
                            if first && e.v4_root {
                                "yes".into()
                            } else {
                                String::new()
                            },
                            client.clone(),
                            opts.clone(),
                        ]
                    })
                })
                .collect();
            columns(&["EXPORT", "FSID", "V4ROOT", "CLIENT", "OPTIONS"], &rows)
        }
        Response::Clients { nfs3, nfs4, gss } => {
            let mut out = String::new();
            let rows: Vec<Vec<String>> = nfs4
                .iter()
                .map(|c| {
                    vec![
                        c.id.clone(),
                        c.address.clone().unwrap_or_else(|| "-".into()),
                        format!("4.{}", c.minor_version),
                        if c.confirmed { "yes" } else { "no" }.into(),
                        c.idle_secs.to_string(),
                        c.sessions.to_string(),
                        c.opens.to_string(),
                        c.locks.to_string(),
                        c.delegations.to_string(),
                        if c.auth.is_empty() {
                            "-".into()
                        } else {
                            c.auth.clone()
                        },
                        c.owner.clone(),
                    ]
                })
                .collect();
            let _ = writeln!(out, "NFSv4 clients: {}", rows.len());
            if !rows.is_empty() {
                out.push_str(&columns(
                    &[
                        "ID",
                        "ADDRESS",
                        "VERS",
                        "CONFIRMED",
                        "IDLE_S",
                        "SESSIONS",
                        "OPENS",
                        "LOCKS",
                        "DELEGS",
                        "AUTH",
                        "OWNER",
                    ],
                    &rows,
                ));
            }
            let rows: Vec<Vec<String>> = nfs3
                .iter()
                .map(|c| {
                    vec![
                        c.address.clone(),
                        c.nlm_name.clone().unwrap_or_else(|| "-".into()),
                        c.locks.len().to_string(),
                        c.shares.to_string(),
                        if c.mounts.is_empty() {
                            "-".into()
                        } else {
                            c.mounts.join(",")
                        },
                    ]
                })
                .collect();
            let _ = writeln!(out, "NFSv3 hosts: {}", rows.len());
            if !rows.is_empty() {
                out.push_str(&columns(
                    &["ADDRESS", "NLM_NAME", "LOCKS", "SHARES", "MOUNTS"],
                    &rows,
                ));
            }
            let locks: Vec<Vec<String>> = nfs3
                .iter()
                .flat_map(|c| {
                    c.locks.iter().map(move |l| {
                        vec![
                            c.address.clone(),
                            if l.exclusive { "write" } else { "read" }.into(),
                            l.offset.to_string(),
                            if l.length == 0 {
                                "eof".into()
                            } else {
                                l.length.to_string()
                            },
                            l.file.clone(),
                        ]
                    })
                })
                .collect();
            if !locks.is_empty() {
                let _ = writeln!(out, "NLM locks: {}", locks.len());
                out.push_str(&columns(
                    &["HOST", "TYPE", "OFFSET", "LENGTH", "FILE"],
                    &locks,
                ));
            }
            if !gss.is_empty() {
                let rows: Vec<Vec<String>> = gss
                    .iter()
                    .map(|g| {
                        vec![
                            g.address.clone(),
                            g.principal.clone(),
                            g.uid.map_or_else(|| "anonymous".into(), |u| u.to_string()),
                            if g.services.is_empty() {
                                "-".into()
                            } else {
                                g.services.join(",")
                            },
                            g.expires_secs.to_string(),
                            g.cipher.clone(),
                        ]
                    })
                    .collect();
                let _ = writeln!(out, "Kerberos contexts: {}", rows.len());
                out.push_str(&columns(
                    &[
                        "ADDRESS",
                        "PRINCIPAL",
                        "UID",
                        "SERVICES",
                        "EXPIRES_S",
                        "CIPHER",
                    ],
                    &rows,
                ));
            }
            out
        }
        Response::Evicted { client, released } => {
            format!("evicted {client}: {released} state objects released\n")
        }
        Response::Reloaded {
            exports,
            added,
            removed,
            changed,
        } => {
            let mut out = format!("reloaded: {exports} exports\n");
            for (what, list) in [("added", added), ("removed", removed), ("changed", changed)] {
                for p in list {
                    let _ = writeln!(out, "  {what} {p}");
                }
            }
            out
        }
        Response::Status {
            version,
            uptime_secs,
            limits,
            counters,
        } => {
            let mut out = format!("rnfsd {version}, up {uptime_secs} s\n");
            let rows: Vec<Vec<String>> = limits
                .iter()
                .map(|(k, v)| vec![k.clone(), v.to_string()])
                .collect();
            out.push_str(&columns(&["LIMIT", "VALUE"], &rows));
            let rows: Vec<Vec<String>> = counters
                .iter()
                .map(|(k, v)| vec![k.clone(), v.to_string()])
                .collect();
            out.push_str(&columns(&["COUNTER", "VALUE"], &rows));
            out
        }
        Response::Released { id, exports } => {
            let mut out = format!("identity {id}'s exports forgotten; registered now:\n");
            let rows: Vec<Vec<String>> = exports
                .iter()
                .map(|(i, p)| vec![i.clone(), p.clone()])
                .collect();
            out.push_str(&columns(&["IDENTITY", "EXPORT"], &rows));
            out
        }
        Response::Draining { draining } => {
            let mut out = String::from("pNFS data servers being taken out of service:\n");
            for (ds, copies) in draining {
                let _ = writeln!(out, "  {ds}: {copies} copies left");
            }
            out
        }
        Response::Cluster {
            node_id,
            revision,
            serving,
            service_address,
            grace,
            identities,
        } => {
            let mut out = format!(
                "this head: identity {node_id}, claim revision {revision}, {}{}{}\n",
                if *serving {
                    "serving"
                } else {
                    "not serving (fence run out)"
                },
                service_address
                    .as_deref()
                    .map(|a| format!(", service address {a}"))
                    .unwrap_or_default(),
                if *grace { ", in grace" } else { "" },
            );
            let rows: Vec<Vec<String>> = identities
                .iter()
                .map(|i| {
                    vec![
                        i.id.clone(),
                        i.holder.clone().unwrap_or_else(|| "-".into()),
                        i.revision.to_string(),
                        if i.lease_ttl_secs < 0 {
                            "-".into()
                        } else {
                            format!("{} s", i.lease_ttl_secs)
                        },
                        match i.grace {
                            None => "-".into(),
                            Some((true, since)) => format!("yes, since {since}"),
                            Some((false, _)) => "no".into(),
                        },
                    ]
                })
                .collect();
            out.push_str(&columns(
                &["IDENTITY", "HELD BY", "REVISION", "LEASE LEFT", "GRACE"],
                &rows,
            ));
            out
        }
        Response::Error { message } => format!("error: {message}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExportInfo;

    #[test]
    fn exports_table_aligns_columns_and_names_each_rule() {
        let t = render(&Response::Exports {
            exports: vec![ExportInfo {
                path: "/srv/a".into(),
                fsid: 7,
                v4_root: true,
                rules: vec![
                    ("10.0.0.0/8".into(), "rw,root_squash".into()),
                    ("*".into(), "ro".into()),
                ],
            }],
        });
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("EXPORT  FSID  V4ROOT  CLIENT      OPTIONS"));
        assert_eq!(lines[1], "/srv/a  7     yes     10.0.0.0/8  rw,root_squash");
        assert_eq!(lines[2], "                      *           ro");
    }
}
