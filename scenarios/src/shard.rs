//! Shards of a sweep: `K/N` on the command line, or from the environment a
//! job array sets, so a sweep too big for one machine runs on the arrays
//! people already have (docs/simulation.md has a Kubernetes Indexed Job
//! and a Slurm array, with the merge step).

/// Parses `K/N` with `1 <= K <= N`.
pub fn parse(s: &str) -> Result<(u64, u64), crate::Error> {
    let bad = || crate::Error::Usage(format!("'{s}' is not a shard; expected K/N with 1 <= K <= N (e.g. 2/8), or env"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// The shard a job array's task is: a Kubernetes Indexed Job
/// (`JOB_COMPLETION_INDEX`, 0-based, with `IDEMSIM_SHARD_COUNT` set to
/// its `completions`) or a Slurm array (`SLURM_ARRAY_TASK_ID` from
/// `SLURM_ARRAY_TASK_MIN`, `SLURM_ARRAY_TASK_COUNT` tasks).
pub fn from_env() -> Result<(u64, u64), crate::Error> {
    from_vars(&|name| std::env::var(name).ok()).map_err(crate::Error::Usage)
}

fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> Result<(u64, u64), String> {
    let number = |name: &str| -> Result<Option<u64>, String> {
        var(name).map(|v| v.trim().parse().map_err(|_| format!("{name}='{v}' is not a number"))).transpose()
    };
    let (index, count) = if let Some(index) = number("JOB_COMPLETION_INDEX")? {
        let count = number("IDEMSIM_SHARD_COUNT")?
            .ok_or("JOB_COMPLETION_INDEX is set but IDEMSIM_SHARD_COUNT is not: set it to the Job's completions")?;
        (index, count)
    } else if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let count =
            number("SLURM_ARRAY_TASK_COUNT")?.ok_or("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")?;
        (id.checked_sub(min).ok_or("SLURM_ARRAY_TASK_ID is below SLURM_ARRAY_TASK_MIN")?, count)
    } else {
        return Err("--shard env needs JOB_COMPLETION_INDEX and IDEMSIM_SHARD_COUNT (Kubernetes) or \
                    SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (Slurm)"
            .into());
    };
    if index >= count {
        return Err(format!("shard index {index} is not below the shard count {count}"));
    }
    Ok((index + 1, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn job_arrays_name_their_shard() {
        let k8s = [("JOB_COMPLETION_INDEX", "3"), ("IDEMSIM_SHARD_COUNT", "8")];
        assert_eq!(from_vars(&env(&k8s)), Ok((4, 8)));
        let slurm = [("SLURM_ARRAY_TASK_ID", "11"), ("SLURM_ARRAY_TASK_MIN", "10"), ("SLURM_ARRAY_TASK_COUNT", "4")];
        assert_eq!(from_vars(&env(&slurm)), Ok((2, 4)));
        assert!(from_vars(&env(&[("JOB_COMPLETION_INDEX", "0")])).unwrap_err().contains("IDEMSIM_SHARD_COUNT"));
        assert!(from_vars(&env(&[])).unwrap_err().contains("--shard env needs"));
        let past = [("JOB_COMPLETION_INDEX", "8"), ("IDEMSIM_SHARD_COUNT", "8")];
        assert!(from_vars(&env(&past)).unwrap_err().contains("not below"));
        assert_eq!(parse("2/8").unwrap(), (2, 8));
        assert!(parse("9/8").is_err() && parse("0/8").is_err() && parse("x").is_err());
    }
}
