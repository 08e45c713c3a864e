//! Which addresses `web_fetch` may connect to.
//!
//! A model can be talked into fetching `http://169.254.169.254/` (cloud
//! credentials) or an admin page on the user's network by a page it read a
//! minute earlier. So every address a fetch would connect to, after DNS
//! resolution and again on each redirect hop, is classified here, and the
//! non-public ones are refused unless the settings allow them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Loopback,
    Private,
    SharedNat,
    LinkLocal,
    Unspecified,
    Multicast,
    Broadcast,
    Reserved,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Loopback => "a loopback address",
            Kind::Private => "a private address",
            Kind::SharedNat => "a shared (carrier-grade NAT) address",
            Kind::LinkLocal => "a link-local address (where cloud metadata services answer)",
            Kind::Unspecified => "an unspecified address",
            Kind::Multicast => "a multicast address",
            Kind::Broadcast => "a broadcast address",
            Kind::Reserved => "a reserved address",
        })
    }
}

/// `None` for a public address, otherwise what kind of non-public one it is.
/// IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4)
/// are judged by the IPv4 address they reach.
pub(crate) fn classify(ip: IpAddr) -> Option<Kind> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Kind> {
    let [a, b, ..] = ip.octets();
    if ip.is_broadcast() {
        Some(Kind::Broadcast)
    } else if a == 0 {
        // 0.0.0.0/8 "this network": connecting to 0.0.0.0 reaches the host itself.
        Some(Kind::Unspecified)
    } else if ip.is_loopback() {
        Some(Kind::Loopback)
    } else if ip.is_private() {
        Some(Kind::Private)
    } else if a == 100 && (b & 0xc0) == 64 {
        Some(Kind::SharedNat)
    } else if ip.is_link_local() {
        Some(Kind::LinkLocal)
    } else if ip.is_multicast() {
        Some(Kind::Multicast)
    } else if a >= 240
        || (a == 198 && (b & 0xfe) == 18)
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
    {
        // 240/4 future use, 198.18/15 benchmarking, 192.0.0/24 protocol assignments.
        Some(Kind::Reserved)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Kind> {
    if ip.is_unspecified() {
        return Some(Kind::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Kind::Loopback);
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let first = ip.segments()[0];
    if (first & 0xfe00) == 0xfc00 {
        Some(Kind::Private) // fc00::/7 unique local
    } else if (first & 0xffc0) == 0xfe80 {
        Some(Kind::LinkLocal) // fe80::/10
    } else if (first & 0xffc0) == 0xfec0 {
        Some(Kind::Private) // fec0::/10 deprecated site-local
    } else if (first & 0xff00) == 0xff00 {
        Some(Kind::Multicast)
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address stands for, if it is one of the forms
/// that route to IPv4.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // ::ffff:a.b.c.d mapped, ::a.b.c.d compatible (deprecated).
        [0, 0, 0, 0, 0, 0xffff, ..] | [0, 0, 0, 0, 0, 0, ..] => Some(low),
        // 64:ff9b::a.b.c.d, the NAT64 well-known prefix.
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(low),
        // 2002:AABB:CCDD::/48, 6to4.
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// An address range written as `ip/prefix` (a bare ip is one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    net: IpAddr,
    prefix: u8,
}

impl Range {
    pub(crate) fn parse(text: &str) -> Result<Range, String> {
        let (ip, prefix) = match text.split_once('/') {
            Some((ip, prefix)) => (ip, Some(prefix)),
            None => (text, None),
        };
        let net: IpAddr = ip.trim().parse().map_err(|_| {
            format!("`{text}` is not an address range like 127.0.0.0/8 or fd00::/8")
        })?;
        let net = net.to_canonical();
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.trim().parse::<u8>() {
                Ok(p) if p <= max => p,
                _ => return Err(format!("`{text}`: the prefix length must be 0 to {max}")),
            },
        };
        Ok(Range { net, prefix })
    }

    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(u32::from(net).into(), u32::from(ip).into(), self.prefix, 32)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(u128::from(net), u128::from(ip), self.prefix, 128)
            }
            _ => false,
        }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.net, self.prefix)
    }
}

fn prefix_eq(a: u128, b: u128, prefix: u8, bits: u8) -> bool {
    let shift = u32::from(bits - prefix);
    a.checked_shr(shift).unwrap_or(0) == b.checked_shr(shift).unwrap_or(0)
}

/// Which non-public addresses the user allowed (`web.allowPrivateAddresses`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Allow {
    /// Only public addresses (the default).
    #[default]
    PublicOnly,
    /// Every address.
    Everything,
    /// Public addresses plus these ranges.
    Ranges(Vec<Range>),
}

/// An address the settings do not let through, and what kind it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) ip: IpAddr,
    pub(crate) kind: Kind,
}

impl Allow {
    /// `Err` when `ip` must not be connected to.
    pub(crate) fn check(&self, ip: IpAddr) -> Result<(), Refusal> {
        let ip = ip.to_canonical();
        let Some(kind) = classify(ip) else {
            return Ok(());
        };
        match self {
            Allow::Everything => Ok(()),
            Allow::Ranges(ranges) if ranges.iter().any(|r| r.contains(ip)) => Ok(()),
            _ => Err(Refusal { ip, kind }),
        }
    }

    /// What to tell the user to change, appended to a refusal.
    pub(crate) fn hint(&self) -> String {
        match self {
            Allow::Ranges(ranges) => format!(
                "it is outside web.allowPrivateAddresses ({}); add its range there (or set it to true) to allow",
                ranges
                    .iter()
                    .map(Range::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "set web.allowPrivateAddresses in settings to allow (true, or a list of ranges such as [\"127.0.0.0/8\"])".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<Kind> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn ipv4_classes() {
        for (ip, expected) in [
            ("127.0.0.1", Some(Kind::Loopback)),
            ("127.255.0.9", Some(Kind::Loopback)),
            ("10.0.0.5", Some(Kind::Private)),
            ("172.16.0.1", Some(Kind::Private)),
            ("172.31.255.255", Some(Kind::Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Kind::Private)),
            ("100.64.0.1", Some(Kind::SharedNat)),
            ("100.127.255.255", Some(Kind::SharedNat)),
            ("100.128.0.1", None),
            ("169.254.169.254", Some(Kind::LinkLocal)),
            ("0.0.0.0", Some(Kind::Unspecified)),
            ("0.1.2.3", Some(Kind::Unspecified)),
            ("224.0.0.1", Some(Kind::Multicast)),
            ("239.255.255.250", Some(Kind::Multicast)),
            ("255.255.255.255", Some(Kind::Broadcast)),
            ("240.0.0.1", Some(Kind::Reserved)),
            ("198.18.0.1", Some(Kind::Reserved)),
            ("192.0.0.170", Some(Kind::Reserved)),
            ("8.8.8.8", None),
            ("93.184.215.14", None),
            ("192.0.2.1", None),
        ] {
            assert_eq!(kind(ip), expected, "{ip}");
        }
    }

    #[test]
    fn ipv6_classes_including_embedded_ipv4() {
        for (ip, expected) in [
            ("::1", Some(Kind::Loopback)),
            ("::", Some(Kind::Unspecified)),
            ("::ffff:127.0.0.1", Some(Kind::Loopback)),
            ("::ffff:10.1.2.3", Some(Kind::Private)),
            ("::ffff:169.254.169.254", Some(Kind::LinkLocal)),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some(Kind::Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(Kind::LinkLocal)),
            ("64:ff9b::808:808", None),
            ("2002:7f00:1::", Some(Kind::Loopback)),
            ("2002:0808:0808::1", None),
            ("fc00::1", Some(Kind::Private)),
            ("fd00:ec2::254", Some(Kind::Private)),
            ("fe80::1", Some(Kind::LinkLocal)),
            ("febf::1", Some(Kind::LinkLocal)),
            ("fec0::1", Some(Kind::Private)),
            ("ff02::1", Some(Kind::Multicast)),
            ("2606:4700:4700::1111", None),
            ("2001:db8::1", None),
        ] {
            assert_eq!(kind(ip), expected, "{ip}");
        }
    }

    #[test]
    fn ranges_parse_and_match_mapped_addresses() {
        let loopback = Range::parse("127.0.0.0/8").unwrap();
        assert!(loopback.contains("127.9.9.9".parse().unwrap()));
        assert!(loopback.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!loopback.contains("10.0.0.1".parse().unwrap()));
        assert!(!loopback.contains("::1".parse().unwrap()));
        let one = Range::parse("10.0.0.5").unwrap();
        assert_eq!(one.to_string(), "10.0.0.5/32");
        assert!(one.contains("10.0.0.5".parse().unwrap()));
        assert!(!one.contains("10.0.0.6".parse().unwrap()));
        let ula = Range::parse("fd00::/8").unwrap();
        assert!(ula.contains("fd12::1".parse().unwrap()));
        assert!(!ula.contains("fc00::1".parse().unwrap()));
        assert!(
            Range::parse("0.0.0.0/0")
                .unwrap()
                .contains("10.1.1.1".parse().unwrap())
        );
        assert!(Range::parse("10.0.0.0/33").unwrap_err().contains("0 to 32"));
        assert!(
            Range::parse("intranet")
                .unwrap_err()
                .contains("not an address range")
        );
    }

    #[test]
    fn allow_list_lets_through_only_its_ranges() {
        let public = "1.1.1.1".parse().unwrap();
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let metadata: IpAddr = "169.254.169.254".parse().unwrap();
        assert_eq!(Allow::PublicOnly.check(public), Ok(()));
        assert_eq!(
            Allow::PublicOnly.check(loopback),
            Err(Refusal {
                ip: loopback,
                kind: Kind::Loopback
            })
        );
        assert_eq!(Allow::Everything.check(metadata), Ok(()));
        let ranges = Allow::Ranges(vec![Range::parse("127.0.0.0/8").unwrap()]);
        assert_eq!(ranges.check("::ffff:127.0.0.1".parse().unwrap()), Ok(()));
        assert_eq!(ranges.check(metadata).unwrap_err().kind, Kind::LinkLocal);
        assert!(ranges.hint().contains("127.0.0.0/8"));
    }
}
