//! A value worked out for a turn's latest questions, kept while they stay the same: every
//! request of a turn asks the same questions (the model's steps add calls and results, not
//! questions), so what depends only on them is worked out once per turn.

/// The last value made for a key and the latest questions (newest first).
pub struct ForQuestions<K, T> {
    last: Option<(K, Vec<String>, T)>,
}

impl<K, T> Default for ForQuestions<K, T> {
    fn default() -> Self {
        Self { last: None }
    }
}

impl<K: PartialEq, T> ForQuestions<K, T> {
    /// The value for `key` and `latest`: the kept one when the last call had the same, else
    /// `make`'s, kept in its place.
    pub fn get_or(&mut self, key: K, latest: &[&str], make: impl FnOnce() -> T) -> &T {
        let kept = matches!(&self.last, Some((k, asked, _))
            if *k == key && asked.iter().map(String::as_str).eq(latest.iter().copied()));
        let (_, _, value) = match (&mut self.last, kept) {
            (Some(last), true) => last,
            (last, _) => last.insert((key, latest.iter().map(|t| t.to_string()).collect(), make())),
        };
        value
    }

    /// The kept value, if any.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> Option<&T> {
        self.last.as_ref().map(|(_, _, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_again_only_for_another_key_or_other_questions() {
        let mut memo = ForQuestions::default();
        let mut made = 0;
        let mut get = |memo: &mut ForQuestions<u8, usize>, key, latest: &[&str]| {
            *memo.get_or(key, latest, || {
                made += 1;
                made
            })
        };
        assert_eq!(get(&mut memo, 1, &["a", "b"]), 1);
        assert_eq!(get(&mut memo, 1, &["a", "b"]), 1);
        assert_eq!(get(&mut memo, 2, &["a", "b"]), 2);
        assert_eq!(get(&mut memo, 2, &["a"]), 3);
        assert_eq!(get(&mut memo, 2, &["a"]), 3);
        assert_eq!(memo.kept(), Some(&3));
    }
}
