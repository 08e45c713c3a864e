//! One real snippet per further language: a call with `$$$` arguments, a
//! repeated metavariable that must and must not match, a statement
//! pattern with a block body, and a pattern that cannot parse.

mod common;

use common::{locations, workspace};
use gantry_core::testing::{err, ok};
use serde_json::json;

/// A language's case: its file, a call pattern and where it matches, a
/// repeated-metavariable pattern and where it matches (only the guard
/// that uses the same name), and a block pattern.
struct Case {
    file: &'static str,
    source: &'static str,
    call: (&'static str, &'static [&'static str]),
    repeated: (&'static str, &'static [&'static str]),
    block: (&'static str, &'static [&'static str]),
    broken: &'static str,
}

async fn check(case: Case) {
    let (_dir, run) = workspace(&[(case.file, case.source)]);
    for (pattern, expected) in [case.call, case.repeated, case.block] {
        let text = ok(&run, "ast_grep", json!({"pattern": pattern})).await;
        let want: Vec<String> = expected
            .iter()
            .map(|at| format!("{}:{at}", case.file))
            .collect();
        assert_eq!(
            locations(&text),
            want,
            "{pattern} in {}:\n{text}",
            case.file
        );
    }
    let message = err(&run, "ast_grep", json!({"pattern": case.broken})).await;
    assert!(
        message.contains("does not parse") && message.contains("Tried:"),
        "{message}"
    );
}

#[cfg(feature = "go")]
#[tokio::test]
async fn go() {
    check(Case {
        file: "main.go",
        source: "package main\n\nfunc main() {\n\tfmt.Println(\"a\", 1)\n\tif err != nil { return err }\n\tif err != nil { return other }\n\tfor i := 0; i < n; i++ {\n\t\tuse(i)\n\t}\n}\n",
        call: ("fmt.Println($$$ARGS)", &["4:2"]),
        repeated: ("if $E != nil { return $E }", &["5:2"]),
        block: ("for $I := 0; $C; $I++ { $$$ }", &["7:2"]),
        broken: "func (",
    })
    .await;
}

#[cfg(feature = "java")]
#[tokio::test]
async fn java() {
    check(Case {
        file: "A.java",
        source: "class A {\n  void f(String s) {\n    System.out.println(s, 1);\n    if (s != null) { s.close(); }\n    if (s != null) { t.close(); }\n    for (int i = 0; i < 3; i++) {\n      g(i);\n    }\n  }\n}\n",
        call: ("System.out.println($$$ARGS)", &["3:5"]),
        repeated: ("if ($X != null) { $X.close(); }", &["4:5"]),
        block: ("for (int $I = 0; $C; $I++) { $$$BODY }", &["6:5"]),
        broken: "if (",
    })
    .await;
}

#[cfg(feature = "javascript")]
#[tokio::test]
async fn javascript() {
    check(Case {
        file: "app.js",
        source: "function f(x) {\n  console.log(\"a\", x);\n  if (x != null) { x.dispose(); }\n  if (x != null) { y.dispose(); }\n  items.forEach((item) => {\n    use(item);\n  });\n}\n",
        call: ("console.log($$$ARGS)", &["2:3"]),
        repeated: ("if ($X != null) { $X.dispose(); }", &["3:3"]),
        block: ("$A.forEach(($I) => { $$$BODY })", &["5:3"]),
        broken: "function (",
    })
    .await;
}

#[cfg(feature = "typescript")]
#[tokio::test]
async fn typescript() {
    check(Case {
        file: "app.ts",
        source: "class Store {\n  count: number = 0;\n  save(x: Item | null): void {\n    this.log(\"a\", x);\n    if (x !== null) { x.dispose(); }\n    if (x !== null) { y.dispose(); }\n  }\n}\n",
        call: ("this.log($$$ARGS)", &["4:5"]),
        repeated: ("if ($X !== null) { $X.dispose(); }", &["5:5"]),
        block: ("count: number = $V;", &["2:3"]),
        broken: "class {",
    })
    .await;
}

#[cfg(feature = "c")]
#[tokio::test]
async fn c() {
    check(Case {
        file: "main.c",
        source: "#include <stdio.h>\n\nint main(void) {\n  printf(\"%d\", 1);\n  if (p != NULL) { free(p); }\n  if (p != NULL) { free(q); }\n  for (int i = 0; i < n; i++) {\n    use(i);\n  }\n  return 0;\n}\n",
        call: ("printf($$$ARGS)", &["4:3"]),
        repeated: ("if ($P != NULL) { free($P); }", &["5:3"]),
        block: ("for (int $I = 0; $C; $I++) { $$$ }", &["7:3"]),
        broken: "int (",
    })
    .await;
}

#[cfg(feature = "cpp")]
#[tokio::test]
async fn cpp() {
    check(Case {
        file: "main.cpp",
        source: "#include <vector>\n\nint main() {\n  std::vector<int> v;\n  v.push_back(1);\n  if (p != nullptr) { delete p; }\n  if (p != nullptr) { delete q; }\n  for (auto& x : v) {\n    use(x);\n  }\n}\n",
        call: ("$V.push_back($$$ARGS)", &["5:3"]),
        repeated: ("if ($P != nullptr) { delete $P; }", &["6:3"]),
        block: ("for (auto& $X : $C) { $$$ }", &["8:3"]),
        broken: "int (",
    })
    .await;
}

#[cfg(feature = "kotlin")]
#[tokio::test]
async fn kotlin() {
    check(Case {
        file: "Main.kt",
        source: "fun main() {\n    println(\"a\", 1)\n    if (x != null) { x.close() }\n    if (x != null) { y.close() }\n    items.forEach { item ->\n        use(item)\n    }\n}\n",
        call: ("println($$$ARGS)", &["2:5"]),
        repeated: ("if ($X != null) { $X.close() }", &["3:5"]),
        block: ("$A.forEach { $I -> $$$BODY }", &["5:5"]),
        broken: "fun (",
    })
    .await;
}

#[cfg(feature = "ruby")]
#[tokio::test]
async fn ruby() {
    check(Case {
        file: "app.rb",
        source: "def run(x)\n  puts(\"a\", x)\n  x.close if x == x\n  x.close if x == y\n  items.each do |item|\n    use(item)\n  end\nend\n",
        call: ("puts($$$ARGS)", &["2:3"]),
        repeated: ("$A == $A", &["3:14"]),
        block: ("$L.each do |$I|\n  $$$\nend", &["5:3"]),
        broken: "def (",
    })
    .await;
}

#[cfg(feature = "php")]
#[tokio::test]
async fn php() {
    check(Case {
        file: "index.php",
        source: "<?php\nfunction f($x) {\n  echo_all(\"a\", $x);\n  if ($x == $x) { g(); }\n  if ($x == $y) { g(); }\n  foreach ($items as $item) {\n    h($item);\n  }\n}\n",
        call: ("echo_all($$$ARGS)", &["3:3"]),
        repeated: ("$A == $A", &["4:7"]),
        block: ("foreach ($L as $I) { $$$ }", &["6:3"]),
        broken: "function (",
    })
    .await;
}

#[cfg(feature = "csharp")]
#[tokio::test]
async fn csharp() {
    check(Case {
        file: "A.cs",
        source: "class A {\n  void F(string s) {\n    Console.WriteLine(s, 1);\n    if (s != null) { s.Dispose(); }\n    if (s != null) { t.Dispose(); }\n    foreach (var x in items) {\n      Use(x);\n    }\n  }\n}\n",
        call: ("Console.WriteLine($$$ARGS)", &["3:5"]),
        repeated: ("if ($X != null) { $X.Dispose(); }", &["4:5"]),
        // A lone identifier is no C# statement, so `{ $$$ }` and `$BODY`
        // as a body do not parse cleanly; a real statement does.
        block: ("foreach (var $X in $C) { Use($X); }", &["6:5"]),
        broken: "class {",
    })
    .await;
}

#[cfg(feature = "swift")]
#[tokio::test]
async fn swift() {
    check(Case {
        file: "main.swift",
        source: "func run() {\n    print(\"a\", 1)\n    if x == x { close() }\n    if x == y { close() }\n    for item in items {\n        use(item)\n    }\n}\n",
        call: ("print($$$ARGS)", &["2:5"]),
        repeated: ("$A == $A", &["3:8"]),
        block: ("for $I in $L { $$$ }", &["5:5"]),
        broken: "func (",
    })
    .await;
}

#[cfg(feature = "lua")]
#[tokio::test]
async fn lua() {
    check(Case {
        file: "main.lua",
        source: "local function run(x)\n  print(\"a\", x)\n  if x == x then close() end\n  if x == y then close() end\n  for i = 1, 10 do\n    use(i)\n  end\nend\n",
        call: ("print($$$ARGS)", &["2:3"]),
        repeated: ("$A == $A", &["3:6"]),
        block: ("for $I = 1, $N do\n  $$$\nend", &["5:3"]),
        broken: "function (",
    })
    .await;
}

#[cfg(feature = "bash")]
#[tokio::test]
async fn bash() {
    check(Case {
        file: "run.sh",
        source: "#!/bin/bash\necho \"a\" 1\nif [ \"$x\" = \"$x\" ]; then exit 1; fi\nfor f in *.txt; do\n  cat \"$f\"\ndone\n",
        call: ("echo $$$ARGS", &["2:1"]),
        repeated: ("[ $A = $A ]", &["3:4"]),
        // `$$$` is bash syntax (`$$` then `$`) and a loop variable cannot be
        // an expansion: the name is literal, the body one `$BODY`.
        block: ("for f in $L; do\n  $BODY\ndone", &["4:1"]),
        broken: "if [ then",
    })
    .await;
}
