//! Zeller's ddmin over any list.

/// Delta debugging (Zeller's ddmin: subsets, then complements): the smallest part of
/// `items` found for which `fails` still holds. `fails(items)` must hold.
pub fn ddmin<T: Clone>(mut items: Vec<T>, fails: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    if !items.is_empty() && fails(&[]) {
        return Vec::new();
    }
    let mut n = 2;
    while items.len() >= 2 {
        let chunk = items.len().div_ceil(n);
        let mut reduced = false;
        for start in (0..items.len()).step_by(chunk) {
            let subset = items[start..(start + chunk).min(items.len())].to_vec();
            if subset.len() < items.len() && fails(&subset) {
                items = subset;
                n = 2;
                reduced = true;
                break;
            }
        }
        // With two chunks, each complement is the other chunk: tested above.
        if !reduced && items.len().div_ceil(chunk) > 2 {
            for start in (0..items.len()).step_by(chunk) {
                let complement: Vec<T> =
                    items[..start].iter().chain(items[(start + chunk).min(items.len())..].iter()).cloned().collect();
                if fails(&complement) {
                    items = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= items.len() {
                break;
            }
            n = (2 * n).min(items.len());
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_two_items_that_matter() {
        let items: Vec<u32> = (0..40).collect();
        let mut calls = 0;
        let kept = ddmin(items, &mut |xs| {
            calls += 1;
            xs.contains(&7) && xs.contains(&31)
        });
        assert_eq!(kept, vec![7, 31]);
        assert!(calls < 100, "{calls} calls");
    }

    #[test]
    fn ddmin_empties_a_list_the_failure_does_not_need() {
        assert_eq!(ddmin(vec![1, 2, 3], &mut |_| true), Vec::<i32>::new());
    }
}
