//! Running fio at a point of the sweep and reading its JSON output.
//!
//! The matching fio job for each engine:
//!
//! | Spindle        | fio                                                       |
//! |----------------|-----------------------------------------------------------|
//! | `psync`, N     | `--ioengine=psync --numjobs=N --thread --group_reporting` |
//! | `uring`, N     | `--ioengine=io_uring --iodepth=N --fixedbufs --registerfiles` |
//! | `uring-sqpoll` | the same plus `--sqthread_poll=1`                         |
//!
//! Latencies are fio's total latency of reads (`lat_ns`, with
//! `--lat_percentiles=1`), as Spindle measures from submission to reaping.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{Measurement, Rw};
use crate::engine::EngineKind;
use crate::error::BenchError;

/// One fio run.
#[derive(Debug, Clone)]
pub struct FioJob<'a> {
    pub program: &'a Path,
    pub path: &'a Path,
    pub size: u64,
    pub bs: usize,
    pub rw: Rw,
    pub mix: u8,
    pub depth: usize,
    pub engine: EngineKind,
    pub direct: bool,
    pub runtime: Duration,
    pub readonly: bool,
    /// SQPOLL: the same CPU placement as Spindle's run.
    pub sqpoll: Option<&'a super::SqpollPlacement>,
}

impl FioJob<'_> {
    /// fio's command-line arguments (JSON goes to stdout).
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "--name=spindle".to_string(),
            format!("--filename={}", self.path.display()),
            format!("--size={}", self.size),
            format!("--bs={}", self.bs),
            format!("--rw={}", self.rw.name()),
            format!("--direct={}", u8::from(self.direct)),
            "--time_based=1".into(),
            format!("--runtime={}ms", self.runtime.as_millis().max(1)),
            "--norandommap=1".into(),
            "--randrepeat=0".into(),
            "--lat_percentiles=1".into(),
            "--output-format=json".into(),
        ];
        if self.rw == Rw::RandRw {
            a.push(format!("--rwmixread={}", self.mix));
        }
        if self.readonly {
            a.push("--readonly".into());
        }
        match self.engine {
            EngineKind::Psync => a.extend([
                "--ioengine=psync".to_string(),
                format!("--numjobs={}", self.depth),
                "--thread".into(),
                "--group_reporting".into(),
            ]),
            EngineKind::Uring | EngineKind::UringSqpoll => {
                a.extend([
                    "--ioengine=io_uring".to_string(),
                    format!("--iodepth={}", self.depth),
                    "--fixedbufs=1".into(),
                    "--registerfiles=1".into(),
                ]);
                if self.engine == EngineKind::UringSqpoll {
                    a.push("--sqthread_poll=1".into());
                    if let Some(p) = self.sqpoll {
                        a.push(format!("--sqthread_poll_cpu={}", p.sq_cpu));
                        let cpus: Vec<String> = p.app_cpus.iter().map(|c| c.to_string()).collect();
                        a.push(format!("--cpus_allowed={}", cpus.join(",")));
                    }
                }
            }
        }
        a
    }
}

/// `fio --version`, e.g. `fio-3.33`.
pub fn version(program: &Path) -> Result<String, BenchError> {
    let out = Command::new(program)
        .arg("--version")
        .output()
        .map_err(|source| BenchError::FioMissing { source })?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs the job and parses what it printed.
pub fn run(job: &FioJob<'_>) -> Result<Measurement, BenchError> {
    let out = Command::new(job.program)
        .args(job.args())
        .output()
        .map_err(|source| BenchError::FioMissing { source })?;
    if !out.status.success() {
        return Err(BenchError::FioFailed {
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// Parses fio's `--output-format=json` output (one job, or one group with
/// `--group_reporting`). Text before the JSON (fio's warnings) is skipped.
pub fn parse(text: &str) -> Result<Measurement, BenchError> {
    let start = text
        .find('{')
        .ok_or_else(|| BenchError::FioParse("no JSON object in fio's output".into()))?;
    let v: Value =
        serde_json::from_str(&text[start..]).map_err(|e| BenchError::FioParse(e.to_string()))?;
    let job = v
        .get("jobs")
        .and_then(|j| j.get(0))
        .ok_or_else(|| BenchError::FioParse("no \"jobs\" array".into()))?;
    if let Some(err) = job.get("error").and_then(Value::as_i64).filter(|&e| e != 0) {
        return Err(BenchError::FioParse(format!(
            "fio reports error {err} ({})",
            std::io::Error::from_raw_os_error(err as i32)
        )));
    }
    let num = |v: &Value, path: &[&str]| -> Result<f64, BenchError> {
        let mut cur = v;
        for p in path {
            cur = cur
                .get(*p)
                .ok_or_else(|| BenchError::FioParse(format!("missing field {}", path.join("."))))?;
        }
        cur.as_f64().ok_or_else(|| {
            BenchError::FioParse(format!("field {} is not a number", path.join(".")))
        })
    };
    let read = job
        .get("read")
        .ok_or_else(|| BenchError::FioParse("no \"read\" section".into()))?;
    let write = job
        .get("write")
        .ok_or_else(|| BenchError::FioParse("no \"write\" section".into()))?;
    let pct = |q: &str| -> f64 {
        read.get("lat_ns")
            .and_then(|l| l.get("percentile"))
            .and_then(|p| p.get(q))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            / 1000.0
    };
    let ios = num(read, &["total_ios"])? + num(write, &["total_ios"])?;
    let runtime_ms = num(read, &["runtime"])?.max(num(write, &["runtime"])?);
    // usr_cpu and sys_cpu are percentages of job_runtime, which sums the
    // runtimes of all jobs of the group.
    let cpu_s = (num(job, &["usr_cpu"])? + num(job, &["sys_cpu"])?) / 100.0
        * num(job, &["job_runtime"])?
        / 1000.0;
    Ok(Measurement {
        read_iops: num(read, &["iops"])?,
        write_iops: num(write, &["iops"])?,
        read_bw: num(read, &["bw_bytes"])?,
        write_bw: num(write, &["bw_bytes"])?,
        lat_mean_us: read
            .get("lat_ns")
            .and_then(|l| l.get("mean"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            / 1000.0,
        lat_p50_us: pct("50.000000"),
        lat_p99_us: pct("99.000000"),
        lat_p999_us: pct("99.900000"),
        cpu_us_per_io: if ios > 0.0 { cpu_s * 1e6 / ios } else { 0.0 },
        ios: ios as u64,
        seconds: runtime_ms / 1000.0,
        syscalls_per_io: 0.0,
        sqpoll_wakeups: 0,
        sqpoll_plain_share: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_match_the_engine() {
        let job = FioJob {
            program: Path::new("fio"),
            path: Path::new("f"),
            size: 1 << 20,
            bs: 4096,
            rw: Rw::RandRw,
            mix: 70,
            depth: 8,
            engine: EngineKind::UringSqpoll,
            direct: true,
            runtime: Duration::from_secs(3),
            readonly: false,
            sqpoll: None,
        };
        let a = job.args().join(" ");
        for want in [
            "--ioengine=io_uring",
            "--iodepth=8",
            "--sqthread_poll=1",
            "--rwmixread=70",
            "--direct=1",
            "--runtime=3000ms",
        ] {
            assert!(a.contains(want), "{want} missing from {a}");
        }
        let psync = FioJob {
            engine: EngineKind::Psync,
            rw: Rw::RandRead,
            readonly: true,
            ..job
        };
        let a = psync.args().join(" ");
        assert!(a.contains("--numjobs=8") && a.contains("--group_reporting"));
        assert!(a.contains("--readonly") && !a.contains("iodepth"));
    }

    #[test]
    fn garbage_is_a_parse_error() {
        assert!(matches!(parse("fio: oops"), Err(BenchError::FioParse(_))));
        assert!(matches!(
            parse("{\"jobs\": []}"),
            Err(BenchError::FioParse(_))
        ));
    }
}
