//! `shell` commands and the network policy (`sandbox.network`), through
//! the real pipeline: a command's connections leave only through the
//! run's proxy, to the hosts the user allowed; a new host is asked about
//! once per run where a person can answer, refused otherwise, and the
//! result says which host and the ways forward. Real clients (curl, pip,
//! npm, cargo, git) reach loopback HTTPS servers standing in for
//! registries, their names mapped to loopback for the proxy
//! (`GANTRY_NETWORK_MAP`), never to any other address.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gantry_core::testing::{StandIn, ok, skip_requested};
use gantry_core::{
    Answer, Confirmation, Human, HumanError, Question, Run, Settings, Workspace, async_trait,
};
use serde_json::{Value, json};

/// A self-signed certificate for `pkg.example.org`, which the clients are
/// told to trust.
struct Tls {
    cert: PathBuf,
    key: PathBuf,
}

impl Tls {
    fn make(dir: &Path) -> Tls {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = std::process::Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args(["-subj", "/CN=pkg.example.org"])
            .args(["-addext", "subjectAltName=DNS:pkg.example.org"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(made.success());
        Tls { cert, key }
    }
}

/// A person who answers every network question with `label`, and counts.
struct Person {
    label: &'static str,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Human for Person {
    async fn confirm(&self, _: &str, _: &Confirmation) -> Result<bool, HumanError> {
        Ok(false)
    }

    async fn ask(&self, question: &Question) -> Result<Answer, HumanError> {
        self.asked.lock().unwrap().push(question.question.clone());
        Ok(Answer::Given {
            chosen: vec![self.label.to_string()],
            text: None,
        })
    }
}

fn person(label: &'static str) -> Arc<Person> {
    Arc::new(Person {
        label,
        asked: Mutex::new(Vec::new()),
    })
}

/// A run with the shell family and `network` as the user's policy, asking
/// `human`; `None` where commands get no network of their own here.
async fn run_with(dir: &Path, network: Value, human: Option<Arc<Person>>) -> Option<Run> {
    // SAFETY: the same value from every test, before any proxy reads it.
    unsafe {
        std::env::set_var(
            gantry_process::network::proxy::MAP_ENV,
            "pkg.example.org=127.0.0.1,other.example.org=127.0.0.1",
        )
    };
    let settings = Settings::from_value(json!({"sandbox": {"network": network}})).unwrap();
    let mut builder = Run::builder(Workspace::new(dir).unwrap()).settings(settings);
    if let Some(human) = human {
        builder = builder.human(human);
    }
    let run = gantry_shell::register(builder).build();
    if !gantry_process::Sandbox::of(&run).await.own_network() {
        assert!(
            skip_requested(
                "GANTRY_SKIP_SANDBOX",
                "the network tests, which need Landlock and user namespaces"
            ),
            "commands get no network of their own here; set GANTRY_SKIP_SANDBOX=1 to skip"
        );
        return None;
    }
    Some(run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_host_is_asked_about_once_and_a_refusal_is_explained() {
    let (_served, server) = StandIn::with_files(&[("x.txt", "reached\n")]);
    let port = server.port;
    let workspace = tempfile::tempdir().unwrap();
    let allowing = person("Allow for this run");
    let Some(run) = run_with(
        workspace.path(),
        json!({"allow": []}),
        Some(allowing.clone()),
    )
    .await
    else {
        return;
    };
    let curl = |host: &str| json!({"command": format!("curl -sS http://{host}:{port}/x.txt")});
    let text = ok(&run, "shell", curl("pkg.example.org")).await;
    assert!(text.contains("reached"), "{text}");
    let text = ok(&run, "shell", curl("pkg.example.org")).await;
    assert!(text.contains("reached"), "{text}");
    let asked = allowing.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        vec![format!(
            "A command wants to connect to pkg.example.org:{port}. Allow it?"
        )],
        "asked once for the run"
    );
    let status = gantry_process::Sandbox::of(&run).await.status().join("\n");
    assert!(
        status.contains(&format!("reached in this run: pkg.example.org:{port}")),
        "{status}"
    );
    // The same in what the run says it holds, mid-run.
    let held = run.resource_status().join("\n");
    assert!(
        held.contains(&format!("reached in this run: pkg.example.org:{port}")),
        "{held}"
    );

    // Refused by the person: the result says which host and what to do.
    let refusing = person("Refuse");
    let run = run_with(
        workspace.path(),
        json!({"allow": []}),
        Some(refusing.clone()),
    )
    .await
    .unwrap();
    let text = ok(&run, "shell", curl("other.example.org")).await;
    assert!(
        text.contains(&format!(
            "[sandbox] The network policy refused the command's connection to \
             other.example.org:{port}"
        )) && text.contains("`sandbox.network.allow`")
            && text.contains("`sandbox: false`"),
        "{text}"
    );
    assert_eq!(refusing.asked.lock().unwrap().len(), 1);

    // No person, or `ask: false`: refused without asking.
    let run = run_with(workspace.path(), json!({"allow": []}), None)
        .await
        .unwrap();
    let text = ok(&run, "shell", curl("pkg.example.org")).await;
    assert!(text.contains("no person could be asked"), "{text}");
    let never = person("Allow for this run");
    let run = run_with(
        workspace.path(),
        json!({"allow": [], "ask": false}),
        Some(never.clone()),
    )
    .await
    .unwrap();
    let text = ok(&run, "shell", curl("pkg.example.org")).await;
    assert!(
        text.contains("[sandbox] The network policy refused"),
        "{text}"
    );
    assert!(never.asked.lock().unwrap().is_empty());

    // A background job is held to the same policy: once its curl is done
    // (it says so through a FIFO the test waits on), a poll reports it.
    let done = workspace.path().join("curl-done");
    let made = std::process::Command::new("mkfifo")
        .arg(&done)
        .status()
        .unwrap();
    assert!(made.success());
    let started = ok(
        &run,
        "shell",
        json!({"command": format!("curl -sS http://other.example.org:{port}/x.txt; echo > curl-done"), "is_background": true}),
    )
    .await;
    assert!(started.contains("bg_1"), "{started}");
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || std::fs::read(done)),
    )
    .await
    .expect("the job's curl ended")
    .unwrap()
    .unwrap();
    let polled = ok(&run, "shell", json!({"handle": "bg_1"})).await;
    assert!(
        polled.contains("The network policy refused the command's connection to other.example.org"),
        "{polled}"
    );
}

/// The registries' clients, over HTTPS through the proxy to an allowed
/// host: curl, pip, npm, cargo (a sparse registry) and git (dumb HTTP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_tools_reach_an_allowed_registry_over_https() {
    let served = tempfile::tempdir().unwrap();
    let root = served.path();
    let tls = Tls::make(root);
    // pip: a wheel by its URL.
    let wheel = root.join("tinypkg-1.0-py3-none-any.whl");
    let made = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             with zipfile.ZipFile(sys.argv[1], 'w') as w:\n\
             \x20   w.writestr('tinypkg.py', 'x = 1\\n')\n\
             \x20   w.writestr('tinypkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n')\n\
             \x20   w.writestr('tinypkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             \x20   w.writestr('tinypkg-1.0.dist-info/RECORD', '')",
        ])
        .arg(&wheel)
        .status()
        .unwrap();
    assert!(made.success());
    // npm: a package document.
    std::fs::write(
        root.join("tinypkg"),
        r#"{"name":"tinypkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tinypkg","version":"1.0.0","dist":{"tarball":"https://pkg.example.org/tinypkg-1.0.0.tgz","shasum":"0000000000000000000000000000000000000000"}}}}"#,
    )
    .unwrap();
    // cargo: a sparse index with one crate.
    std::fs::create_dir_all(root.join("index/ti/ny")).unwrap();
    std::fs::write(
        root.join("index/config.json"),
        r#"{"dl": "https://pkg.example.org/crates"}"#,
    )
    .unwrap();
    std::fs::write(
        root.join("index/ti/ny/tinycrate"),
        r#"{"name":"tinycrate","vers":"1.0.0","deps":[],"cksum":"0000000000000000000000000000000000000000000000000000000000000000","features":{},"yanked":false}"#.to_string() + "\n",
    )
    .unwrap();
    // git: a bare repository served as files.
    let git = |args: &[&str], dir: &Path| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "--bare", "repo.git"], root);
    let source = tempfile::tempdir().unwrap();
    git(&["init", "-q", "-b", "main"], source.path());
    std::fs::write(source.path().join("README"), "hello\n").unwrap();
    git(&["add", "README"], source.path());
    git(
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "commit",
            "-q",
            "-m",
            "one",
        ],
        source.path(),
    );
    git(
        &[
            "push",
            "-q",
            &root.join("repo.git").to_string_lossy(),
            "main",
        ],
        source.path(),
    );
    git(&["update-server-info"], &root.join("repo.git"));

    let server = StandIn::serve(root, Some((&tls.cert, &tls.key)));
    let url = format!("https://pkg.example.org:{}", server.port);
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("Cargo.toml"),
        "[package]\nname = \"uses-tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\ntinycrate = { version = \"1\", registry = \"standin\" }\n",
    )
    .unwrap();
    std::fs::create_dir_all(workspace.path().join("src")).unwrap();
    std::fs::write(workspace.path().join("src/lib.rs"), "").unwrap();
    let Some(run) = run_with(
        workspace.path(),
        json!({"allow": [format!("pkg.example.org:{}", server.port)], "ask": false}),
        None,
    )
    .await
    else {
        return;
    };
    let ca = tls.cert.display().to_string();
    let calls = [
        (
            "curl",
            format!("curl -sS --cacert {ca} {url}/tinypkg"),
            "\"dist-tags\"",
        ),
        (
            "pip",
            format!(
                "PIP_CERT={ca} REQUESTS_CA_BUNDLE={ca} pip download --no-deps \
                 --disable-pip-version-check -d wheels {url}/tinypkg-1.0-py3-none-any.whl && ls \
                 wheels"
            ),
            "tinypkg-1.0-py3-none-any.whl",
        ),
        (
            "npm",
            format!("npm view tinypkg version --registry {url}/ --cafile {ca} --cache ./npm-cache"),
            "1.0.0",
        ),
        (
            "cargo",
            format!(
                "CARGO_REGISTRIES_STANDIN_INDEX=sparse+{url}/index/ CARGO_HTTP_CAINFO={ca} \
                 cargo generate-lockfile && grep -A1 'name = \"tinycrate\"' Cargo.lock"
            ),
            "version = \"1.0.0\"",
        ),
        (
            "git",
            format!("GIT_SSL_CAINFO={ca} git ls-remote {url}/repo.git"),
            "refs/heads/main",
        ),
    ];
    for (tool, command, expected) in calls {
        let text = ok(&run, "shell", json!({"command": command})).await;
        assert!(
            text.contains(expected) && text.contains("[exit code 0"),
            "{tool} through the proxy: {text}"
        );
    }
    // The same tools, to a host not allowed, are refused.
    let text = ok(
        &run,
        "shell",
        json!({"command": format!(
            "GIT_SSL_CAINFO={ca} git ls-remote https://other.example.org:{}/repo.git",
            server.port
        )}),
    )
    .await;
    assert!(
        text.contains(
            "[sandbox] The network policy refused the command's connection to other.example.org"
        ),
        "{text}"
    );
}
