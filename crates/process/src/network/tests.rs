use super::*;

fn to(host: &str, port: u16) -> Destination {
    Destination::new(host, port)
}

#[test]
fn rules_match_names_below_and_ports_as_written() {
    let rule = HostRule::parse("Example.org").unwrap();
    assert!(rule.allows(&to("example.org", 443)));
    assert!(rule.allows(&to("EXAMPLE.org.", 80)));
    assert!(
        !rule.allows(&to("example.org", 22)),
        "no port: 80 and 443 only"
    );
    assert!(!rule.allows(&to("a.example.org", 443)));
    assert!(!rule.allows(&to("badexample.org", 443)));

    let below = HostRule::parse("*.example.org:8443").unwrap();
    assert!(below.allows(&to("pkg.example.org", 8443)));
    assert!(below.allows(&to("a.b.example.org", 8443)));
    assert!(!below.allows(&to("example.org", 8443)));
    assert!(!below.allows(&to("evilexample.org", 8443)));
    assert!(!below.allows(&to("pkg.example.org", 443)));

    let any = HostRule::parse("git.example.org:*").unwrap();
    assert!(any.allows(&to("git.example.org", 22)));
}

#[test]
fn an_address_counts_only_where_listed_as_one() {
    let name = HostRule::parse("localhost:*").unwrap();
    assert!(!name.allows(&to("127.0.0.1", 80)));
    let address = HostRule::parse("192.0.2.7:5432").unwrap();
    assert!(address.allows(&to("192.0.2.7", 5432)));
    assert!(!address.allows(&to("192.0.2.8", 5432)));
    let v6 = HostRule::parse("[2001:db8::1]:443").unwrap();
    assert!(v6.allows(&to("[2001:db8::1]", 443)));
    assert_eq!(v6.to_string(), "[2001:db8::1]:443");
}

#[test]
fn bad_entries_say_what_was_expected() {
    for bad in [
        "",
        "exa mple.org",
        "example.org:0",
        "example.org:http",
        "[::1",
    ] {
        let error = HostRule::parse(bad).unwrap_err();
        assert!(error.contains("expected `example.org`"), "{bad}: {error}");
    }
}

#[test]
fn settings_read_words_booleans_and_the_proxy() {
    let read = |json: &str| {
        serde_json::from_str::<NetworkSetting>(json)
            .unwrap()
            .resolve()
            .unwrap()
    };
    assert_eq!(read("false"), Network::Deny);
    assert_eq!(read("\"allow\""), Network::Allow);
    let Network::Proxied(policy) =
        read(r#"{"allow": ["example.org"], "ask": false, "hostPorts": [5432]}"#)
    else {
        panic!("the proxy mode")
    };
    assert!(!policy.ask);
    assert_eq!(policy.host_ports, vec![5432]);
    assert!(serde_json::from_str::<NetworkSetting>(r#"{"alow": []}"#).is_err());
}

#[test]
fn an_untrusted_workspace_only_narrows() {
    let user = Network::Proxied(ProxyPolicy {
        allow: vec![HostRule::parse("a.example.org").unwrap()],
        ask: true,
        host_ports: vec![5432],
    });
    let (network, ignored) = layered(user.clone(), Some(Network::Allow), false);
    assert_eq!(network, user);
    assert_eq!(ignored.len(), 1);
    let workspace = Network::Proxied(ProxyPolicy {
        allow: vec![
            HostRule::parse("a.example.org").unwrap(),
            HostRule::parse("b.example.org").unwrap(),
        ],
        ask: false,
        host_ports: vec![5432, 6379],
    });
    let (network, ignored) = layered(user.clone(), Some(workspace.clone()), false);
    let Network::Proxied(policy) = network else {
        panic!("still the proxy")
    };
    assert_eq!(
        policy.allow,
        vec![HostRule::parse("a.example.org").unwrap()]
    );
    assert!(!policy.ask, "not asking narrows");
    assert_eq!(policy.host_ports, vec![5432]);
    assert_eq!(ignored.len(), 2, "{ignored:?}");
    assert_eq!(
        layered(Network::Deny, Some(workspace.clone()), false).0,
        Network::Deny
    );
    assert_eq!(layered(user, Some(Network::Deny), false).0, Network::Deny);
    assert_eq!(
        layered(Network::Deny, Some(workspace.clone()), true).0,
        workspace
    );
}
