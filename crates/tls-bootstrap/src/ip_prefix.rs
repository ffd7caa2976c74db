//! IP prefixes (CIDR notation) for the serving approver's allowed address ranges.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::error::Error;

/// An IP prefix such as `10.0.0.0/8` or `fd00::/8`, parsed from CIDR notation. Host bits
/// may be set (`10.1.2.3/8` is `10.0.0.0/8`), as Go's `net.ParseCIDR` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpPrefix {
    address: IpAddr,
    length: u8,
}

impl IpPrefix {
    /// The prefix's length in bits.
    pub fn prefix_len(&self) -> u8 {
        self.length
    }

    /// Whether `ip` lies in this prefix. An IPv4 address never lies in an IPv6 prefix nor the
    /// reverse (IPv4-mapped IPv6 addresses are not unmapped).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, ip) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                let mask = mask32(self.length);
                u32::from(p) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(p), IpAddr::V6(a)) => {
                let mask = mask128(self.length);
                u128::from(p) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpPrefix {
    type Err = Error;

    fn from_str(s: &str) -> Result<IpPrefix, Error> {
        let (addr, len) = s.split_once('/').ok_or(Error::InvalidPrefix)?;
        let address: IpAddr = addr.parse().map_err(|_| Error::InvalidPrefix)?;
        if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::InvalidPrefix);
        }
        let length: u8 = len.parse().map_err(|_| Error::InvalidPrefix)?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        if length > max {
            return Err(Error::InvalidPrefix);
        }
        Ok(IpPrefix { address, length })
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.length)
    }
}

fn mask32(length: u8) -> u32 {
    u32::MAX
        .checked_shl(32_u32.saturating_sub(u32::from(length)))
        .unwrap_or(0)
}

fn mask128(length: u8) -> u128 {
    u128::MAX
        .checked_shl(128_u32.saturating_sub(u32::from(length)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        let p: IpPrefix = "10.0.0.0/8".parse().unwrap();
        assert!(p.contains("10.255.1.2".parse().unwrap()));
        assert!(!p.contains("11.0.0.1".parse().unwrap()));
        assert!(!p.contains("::ffff:10.0.0.1".parse().unwrap()));
        let all: IpPrefix = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("1.2.3.4".parse().unwrap()));
        let host: IpPrefix = "192.168.1.7/32".parse().unwrap();
        assert!(host.contains("192.168.1.7".parse().unwrap()));
        assert!(!host.contains("192.168.1.8".parse().unwrap()));
        let v6: IpPrefix = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!(!v6.contains("fe80::1".parse().unwrap()));
        assert_eq!(v6.to_string(), "fd00::/8");
        for bad in [
            "",
            "10.0.0.0",
            "10.0.0.0/",
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/+8",
            "10.0.0.0/0008",
            "x/8",
            "10.0.0.0/8/8",
            "10.0.0.0/-1",
        ] {
            assert!(bad.parse::<IpPrefix>().is_err(), "{bad}");
        }
    }
}
