//! Processes on this machine, as the harnesses see them: a free loopback
//! port, a process's CPU time, memory and children (Linux `/proc`), and a
//! command run under a prefix such as `taskset -c 0,1`.

use std::path::Path;
use std::process::Command;

/// A free loopback port (bound, read, released).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// User + system CPU seconds of a process and its threads, from
/// `/proc/PID/stat` (in USER_HZ, 100 ticks a second on every Linux port);
/// `None` when the process is gone or elsewhere than Linux.
pub fn cpu_secs(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may
    // hold spaces; utime and stime are fields 14 and 15 of the line.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The CPU seconds of `pids` so far; processes gone count 0.
pub fn cpu_secs_of(pids: &[u32]) -> f64 {
    pids.iter().filter_map(|&p| cpu_secs(p)).sum()
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
fn status_kib(pid: &str, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Summed resident memory of `pids` in KiB.
pub fn rss_kib(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|p| status_kib(&p.to_string(), "VmRSS"))
        .sum()
}

/// This process's peak resident memory in MiB.
pub fn peak_rss_mib() -> Option<f64> {
    status_kib("self", "VmHWM").map(|kb| kb as f64 / 1024.0)
}

/// Whether this process runs as root (from `/proc/self/status`).
pub fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().nth(1))
            == Some("0")
    })
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                // pid (comm) state ppid …; comm may hold spaces.
                s.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                    .and_then(|pp| pp.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// `exe` as a command, run under `prefix` when there is one.
pub fn command(prefix: &[String], exe: &Path) -> Command {
    match prefix.split_first() {
        Some((p, rest)) => {
            let mut c = Command::new(p);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    }
}

/// The prefix that runs a command on `cpus` (`taskset -c 0,1`); none for
/// no CPUs.
pub fn taskset(cpus: &[usize]) -> Vec<String> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
    vec!["taskset".into(), "-c".into(), list.join(",")]
}

/// Stops a child with SIGTERM (a server's graceful shutdown) and reaps it.
pub fn terminate(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_cpu_time_memory_and_no_prefix_by_default() {
        if !Path::new("/proc/self/stat").exists() {
            return;
        }
        assert!(cpu_secs(std::process::id()).is_some());
        assert!(rss_kib(&[std::process::id()]) > 0);
        assert!(peak_rss_mib().is_some_and(|m| m > 0.0));
        assert_eq!(cpu_secs_of(&[u32::MAX]), 0.0);
        assert!(taskset(&[]).is_empty());
        assert_eq!(taskset(&[0, 2]), ["taskset", "-c", "0,2"]);
    }
}
