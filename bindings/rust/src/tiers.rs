//! Tiers (`include/mxlimit/c_tiers.h`; docs/policies.md, "Tiers"): putting a
//! user or a network in one of the policy file's tiers while running, taking
//! it out, and listing who is in which. A request's tier comes back in
//! [`Decision::tier`](crate::Decision::tier).

use std::os::raw::{c_char, c_void};
use std::ptr;
use std::time::Duration;

use crate::{result, sys, Error, Limiter};

/// Who a tier assignment is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierKind {
    /// A Matrix user ID.
    User,
    /// A network (an address is a /32 or /128).
    Network,
}

/// One tier assignment in force, as [`Limiter::list_tiers`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierAssignment {
    pub kind: TierKind,
    /// The user ID, or the network in canonical form ("2001:db8:bad::/48").
    pub subject: String,
    /// The tier's name.
    pub tier: String,
    /// Set by [`Limiter::set_tier`]; `false`: the policy file's
    /// `tiers.assign`.
    pub runtime: bool,
    /// A runtime assignment's time left, rounded up to the millisecond;
    /// `None`: it does not expire.
    pub expires_in: Option<Duration>,
}

impl Limiter {
    /// Puts `subject` (a user ID "@bridge:example.org", or a network or
    /// address "2001:db8:bad::/48") in `tier`, one of the policy file's
    /// `tiers:`, until `expires_in` from now has passed (`None`: until
    /// [`Limiter::clear_tier`]), replacing an earlier runtime assignment of
    /// the subject. Its next request is checked against the tier's rates;
    /// its buckets are kept. The expiry runs on the clock of
    /// [`monotonic_now_ns`](crate::monotonic_now_ns), which requests use
    /// unless given another time with [`Request::at`](crate::Request::at).
    ///
    /// Errors: `MXLIMIT_EINVAL` (a subject that is neither, a zero
    /// `expires_in`), `MXLIMIT_ENOTFOUND` (no such tier), `MXLIMIT_ENOMEM`
    /// (the cap on runtime assignments, 100,000, is reached).
    pub fn set_tier(
        &self,
        subject: &str,
        tier: &str,
        expires_in: Option<Duration>,
    ) -> Result<(), Error> {
        let expires_in_ms = match expires_in {
            None => 0,
            Some(d) if d.is_zero() => {
                return Err(Error::invalid(
                    "set_tier: expires_in is zero (None means no expiry)",
                ))
            }
            // Rounded up: a sub-millisecond expiry must not become 0, "never".
            Some(d) => ((d.as_nanos() + 999_999) / 1_000_000).min(i64::MAX as u128) as i64,
        };
        let mut errmsg = ptr::null_mut();
        // SAFETY: (pointer, length) pairs of live strings, for the call only.
        let rc = unsafe {
            sys::mxlimit_set_tier(
                self.raw.as_ptr(),
                subject.as_ptr() as *const c_char,
                subject.len(),
                tier.as_ptr() as *const c_char,
                tier.len(),
                expires_in_ms,
                &mut errmsg,
            )
        };
        result(rc, errmsg)
    }

    /// Ends the runtime assignment of `subject` (written as for
    /// [`Limiter::set_tier`]); the policy file's, if any, applies again.
    /// `MXLIMIT_ENOTFOUND` if it has none.
    pub fn clear_tier(&self, subject: &str) -> Result<(), Error> {
        let mut errmsg = ptr::null_mut();
        // SAFETY: as in `set_tier`.
        let rc = unsafe {
            sys::mxlimit_clear_tier(
                self.raw.as_ptr(),
                subject.as_ptr() as *const c_char,
                subject.len(),
                &mut errmsg,
            )
        };
        result(rc, errmsg)
    }

    /// Every assignment in force now, the file's and the runtime ones,
    /// users first, then by subject (a subject with both has the file's
    /// first). Allocates; for an admin endpoint, not the request path.
    pub fn list_tiers(&self) -> Result<Vec<TierAssignment>, Error> {
        let mut json = ptr::null_mut();
        let mut errmsg = ptr::null_mut();
        // SAFETY: valid out-pointers; the text is freed below.
        let rc = unsafe { sys::mxlimit_list_tiers(self.raw.as_ptr(), &mut json, &mut errmsg) };
        result(rc, errmsg)?;
        // SAFETY: a NUL-terminated string the library allocated for us.
        let text = unsafe { std::ffi::CStr::from_ptr(json) }
            .to_string_lossy()
            .into_owned();
        unsafe { sys::mxlimit_free(json as *mut c_void) };
        parse_assignments(&text)
    }
}

/// The JSON array of `mxlimit_list_tiers`. Members it does not know (a later
/// library may add some) are skipped.
fn parse_assignments(text: &str) -> Result<Vec<TierAssignment>, Error> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.assignments().map_err(|what| Error {
        code: sys::MXLIMIT_EINTERNAL,
        message: format!(
            "mxlimit_list_tiers: unexpected JSON at byte {}: {}",
            p.i, what
        ),
    })
}

/// A reader of the little JSON `mxlimit_list_tiers` writes: arrays, objects,
/// strings (every escape), integers, booleans and null.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn assignments(&mut self) -> Result<Vec<TierAssignment>, &'static str> {
        let mut out = Vec::new();
        self.expect(b'[')?;
        if !self.eat(b']') {
            loop {
                out.push(self.assignment()?);
                if self.eat(b']') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        self.space();
        if self.i != self.s.len() {
            return Err("text after the array");
        }
        Ok(out)
    }

    fn assignment(&mut self) -> Result<TierAssignment, &'static str> {
        let mut kind = None;
        let mut subject = None;
        let mut tier = None;
        let mut runtime = None;
        let mut expires_in = None;
        self.expect(b'{')?;
        if !self.eat(b'}') {
            loop {
                let key = self.string()?;
                self.expect(b':')?;
                match key.as_str() {
                    "kind" => {
                        kind = Some(match self.string()?.as_str() {
                            "user" => TierKind::User,
                            "network" => TierKind::Network,
                            _ => return Err("kind is neither \"user\" nor \"network\""),
                        })
                    }
                    "subject" => subject = Some(self.string()?),
                    "tier" => tier = Some(self.string()?),
                    "runtime" => runtime = Some(self.boolean()?),
                    "expires_in_ms" => {
                        let ms = self.integer()?;
                        expires_in = Some(Duration::from_millis(ms.max(0) as u64));
                    }
                    _ => self.skip_value()?,
                }
                if self.eat(b'}') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        Ok(TierAssignment {
            kind: kind.ok_or("an element without kind")?,
            subject: subject.ok_or("an element without subject")?,
            tier: tier.ok_or("an element without tier")?,
            runtime: runtime.ok_or("an element without runtime")?,
            expires_in,
        })
    }

    fn space(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.space();
        self.s.get(self.i).copied()
    }

    /// Consumes `c` (after any space) if it is next.
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), &'static str> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(match c {
                b'[' => "expected '['",
                b'{' => "expected '{'",
                b':' => "expected ':'",
                _ => "expected ',' or the end of the array or object",
            })
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        self.space();
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn boolean(&mut self) -> Result<bool, &'static str> {
        if self.literal(b"true") {
            Ok(true)
        } else if self.literal(b"false") {
            Ok(false)
        } else {
            Err("expected true or false")
        }
    }

    fn integer(&mut self) -> Result<i64, &'static str> {
        self.space();
        let start = self.i;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|digits| digits.parse().ok())
            .ok_or("expected an integer")
    }

    fn hex4(&mut self) -> Result<u32, &'static str> {
        let digits = self.s.get(self.i..self.i + 4).ok_or("a short \\u escape")?;
        let text = std::str::from_utf8(digits).map_err(|_| "a bad \\u escape")?;
        let value = u32::from_str_radix(text, 16).map_err(|_| "a bad \\u escape")?;
        self.i += 4;
        Ok(value)
    }

    fn string(&mut self) -> Result<String, &'static str> {
        if self.peek() != Some(b'"') {
            return Err("expected a string");
        }
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = *self.s.get(self.i).ok_or("an unterminated string")?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = *self.s.get(self.i).ok_or("an unterminated string")?;
                    self.i += 1;
                    let simple = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0C),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => return Err("an unknown escape"),
                    };
                    if let Some(byte) = simple {
                        out.push(byte);
                        continue;
                    }
                    let mut code = self.hex4()?;
                    if (0xD800..0xDC00).contains(&code) && self.s[self.i..].starts_with(b"\\u") {
                        self.i += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err("a bad surrogate pair");
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    }
                    let ch = char::from_u32(code).unwrap_or('\u{FFFD}');
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| "a string that is not UTF-8")
    }

    /// Skips one value of any type.
    fn skip_value(&mut self) -> Result<(), &'static str> {
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'{') | Some(b'[') => {
                let close = if self.s[self.i] == b'{' { b'}' } else { b']' };
                let object = close == b'}';
                self.i += 1;
                if self.eat(close) {
                    return Ok(());
                }
                loop {
                    if object {
                        self.string()?;
                        self.expect(b':')?;
                    }
                    self.skip_value()?;
                    if self.eat(close) {
                        return Ok(());
                    }
                    self.expect(b',')?;
                }
            }
            Some(b't') | Some(b'f') => self.boolean().map(|_| ()),
            _ if self.literal(b"null") => Ok(()),
            _ => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                if self.i == start {
                    Err("expected a value")
                } else {
                    Ok(())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_list_with_escapes_and_unknown_members() {
        let text = r#"[{"kind":"user","subject":"@q\"uo\\te:example.org","tier":"bridge","runtime":true,"expires_in_ms":1500},
            {"kind":"network","subject":"2001:db8:bad::/48","tier":"s\u00e9\ud83d\ude00","runtime":false,"later":{"a":[1,2.5e3,null,"x"]}}]"#;
        let got = parse_assignments(text).unwrap();
        assert_eq!(
            got,
            vec![
                TierAssignment {
                    kind: TierKind::User,
                    subject: "@q\"uo\\te:example.org".to_string(),
                    tier: "bridge".to_string(),
                    runtime: true,
                    expires_in: Some(Duration::from_millis(1500)),
                },
                TierAssignment {
                    kind: TierKind::Network,
                    subject: "2001:db8:bad::/48".to_string(),
                    tier: "s\u{e9}\u{1F600}".to_string(),
                    runtime: false,
                    expires_in: None,
                },
            ]
        );
        assert_eq!(parse_assignments(" [ ] ").unwrap(), vec![]);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in [
            "",
            "[",
            "[{}]",
            "[{\"kind\":\"room\",\"subject\":\"x\",\"tier\":\"t\",\"runtime\":true}]",
            "[{\"kind\":\"user\",\"subject\":\"x\",\"tier\":\"t\",\"runtime\":1}]",
            "[] x",
            "[{\"kind\":\"user\",\"subject\":\"x\\q\"}]",
        ] {
            let err = parse_assignments(bad).unwrap_err();
            assert_eq!(err.code, sys::MXLIMIT_EINTERNAL, "{}", bad);
        }
    }
}
