//! `lsp`, `lsp_rename` and diagnostics on write against a real
//! typescript-language-server (over tsserver) on a small project.

mod common;

use common::*;
use gantry_core::testing::{ok, read};
use serde_json::json;

const TSCONFIG: &str = r#"{
  "compilerOptions": { "strict": true, "target": "es2020", "module": "commonjs", "noEmit": true },
  "include": ["src"]
}
"#;

const SHAPES: &str = r#"/** Something with an area. */
export interface Shape {
  area(): number;
}

export class Square implements Shape {
  constructor(private side: number) {}
  area(): number {
    return this.side * this.side;
  }
}

export class Circle implements Shape {
  constructor(private radius: number) {}
  area(): number {
    return Math.PI * this.radius * this.radius;
  }
}

/** Adds up the areas of `shapes`. */
export function totalArea(shapes: Shape[]): number {
  return shapes.reduce((sum, s) => sum + s.area(), 0);
}
"#;

const MAIN: &str = r#"import { Circle, Shape, Square, totalArea } from "./shapes";

const shapes: Shape[] = [new Square(2), new Circle(1)];
const first = shapes[0];
const total: number = totalArea(shapes);
export const report = `${total} ${first.area()}`;
"#;

fn ts_project() -> Option<(tempfile::TempDir, gantry_core::Run)> {
    if !typescript() {
        return None;
    }
    Some(project(
        &[
            ("tsconfig.json", TSCONFIG),
            ("src/shapes.ts", SHAPES),
            ("src/main.ts", MAIN),
        ],
        json!({}),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_answers_on_a_typescript_project() {
    let Some((_dir, run)) = ts_project() else {
        return;
    };
    // The first request of the run: answered by the semantic server once
    // the project is loaded, not by a syntax-only guess at the import line.
    let definition = lsp(
        &run,
        json!({"action": "definition", "file": "src/main.ts", "line": 5, "symbol": "totalArea"}),
    )
    .await;
    assert!(
        definition
            .contains("src/shapes.ts:21: export function totalArea(shapes: Shape[]): number {"),
        "{definition}"
    );

    let references = lsp(
        &run,
        json!({"action": "references", "file": "src/shapes.ts", "line": 21, "symbol": "totalArea"}),
    )
    .await;
    assert!(
        references.contains("(3 references on 3 lines in 2 files)"),
        "{references}"
    );
    assert!(
        references.contains("src/main.ts\n  1: import { Circle, Shape, Square, totalArea } from \"./shapes\";\n  5: const total: number = totalArea(shapes);"),
        "{references}"
    );

    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "src/main.ts", "line": 5, "symbol": "totalArea"}),
    )
    .await;
    assert!(
        hover.contains("totalArea(shapes: Shape[]): number"),
        "{hover}"
    );
    assert!(hover.contains("Adds up the areas of `shapes`."), "{hover}");

    // In source order, though tsserver lists them by name.
    let outline = lsp(&run, json!({"action": "symbols", "file": "src/shapes.ts"})).await;
    let order: Vec<&str> = [
        "2: interface Shape",
        "6: class Square",
        "  8: method area",
        "13: class Circle",
        "21: function totalArea",
    ]
    .into_iter()
    .collect();
    let positions: Vec<usize> = order
        .iter()
        .map(|item| {
            outline
                .find(item)
                .unwrap_or_else(|| panic!("{item} in {outline}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{outline}");
    let search = lsp(&run, json!({"action": "symbols", "query": "Circle"})).await;
    assert!(
        search.contains("src/shapes.ts:13: class Circle"),
        "{search}"
    );

    // An interface and its method: the two classes that implement them.
    let implementations = lsp(
        &run,
        json!({"action": "implementation", "file": "src/shapes.ts", "line": 2, "symbol": "Shape"}),
    )
    .await;
    assert!(
        implementations.contains("  6: export class Square implements Shape {")
            && implementations.contains("  13: export class Circle implements Shape {"),
        "{implementations}"
    );
    let methods = lsp(
        &run,
        json!({"action": "implementation", "file": "src/main.ts", "line": 6, "symbol": "area"}),
    )
    .await;
    assert!(
        methods.contains("(2 implementations on 2 lines in 1 file)"),
        "{methods}"
    );
    assert!(
        methods.contains("src/shapes.ts\n  8: area(): number {\n  15: area(): number {"),
        "{methods}"
    );

    let type_definition = lsp(
        &run,
        json!({"action": "type_definition", "file": "src/main.ts", "line": 4, "symbol": "first"}),
    )
    .await;
    assert!(
        type_definition.contains("src/shapes.ts:2: export interface Shape {"),
        "{type_definition}"
    );

    let refactors = lsp(
        &run,
        json!({"action": "code_actions", "file": "src/main.ts", "line": 4, "symbol": "first"}),
    )
    .await;
    assert!(
        refactors.starts_with("code actions at `first` (src/main.ts:4); listed, not applied"),
        "{refactors}"
    );
    assert!(
        refactors.contains("[refactor.inline.variable] Inline variable"),
        "{refactors}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_actions_offer_the_missing_import() {
    let Some((_dir, run)) = ts_project() else {
        return;
    };
    lsp(&run, json!({"action": "symbols", "file": "src/main.ts"})).await;
    let note = write(
        &run,
        "src/extra.ts",
        "const fresh = new Square(3);\nexport { fresh };\n",
    )
    .await;
    assert!(
        note.starts_with("problems in this file after the write (no earlier diagnostics"),
        "{note}"
    );
    assert!(
        note.contains("src/extra.ts:1: error[2304]: Cannot find name 'Square'."),
        "{note}"
    );
    let actions = lsp(
        &run,
        json!({"action": "code_actions", "file": "src/extra.ts", "line": 1, "symbol": "Square"}),
    )
    .await;
    assert!(
        actions.contains("[quickfix] Add import from \"./shapes\" (preferred)"),
        "{actions}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_changes_both_files_through_the_write_path() {
    let Some((_dir, run)) = ts_project() else {
        return;
    };
    let renamed = ok(
        &run,
        "lsp_rename",
        json!({"file": "src/main.ts", "line": 5, "symbol": "totalArea", "new_name": "sumOfAreas"}),
    )
    .await;
    assert!(
        renamed.contains("renamed `totalArea` to `sumOfAreas` in 2 file(s)"),
        "{renamed}"
    );
    assert!(
        renamed.contains("M src/main.ts") && renamed.contains("M src/shapes.ts"),
        "{renamed}"
    );
    assert!(!renamed.contains("introduced"), "{renamed}");
    assert!(read(&run, "src/shapes.ts").contains("export function sumOfAreas(shapes: Shape[])"));
    let main = read(&run, "src/main.ts");
    assert!(main.contains("Square, sumOfAreas } from"), "{main}");
    assert!(
        main.contains("const total: number = sumOfAreas(shapes);"),
        "{main}"
    );
    let definition = lsp(
        &run,
        json!({"action": "definition", "file": "src/main.ts", "line": 5, "symbol": "sumOfAreas"}),
    )
    .await;
    assert!(
        definition.contains("src/shapes.ts:21: export function sumOfAreas"),
        "{definition}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_on_write_and_for_a_file_and_the_project() {
    let Some((_dir, run)) = ts_project() else {
        return;
    };
    let clean = lsp(
        &run,
        json!({"action": "diagnostics", "file": "src/main.ts"}),
    )
    .await;
    assert!(clean.starts_with("none found"), "{clean}");
    let shapes = lsp(
        &run,
        json!({"action": "diagnostics", "file": "src/shapes.ts"}),
    )
    .await;
    assert!(shapes.starts_with("none found"), "{shapes}");
    let project = lsp(&run, json!({"action": "diagnostics", "file": "*"})).await;
    assert!(
        project.starts_with("$ tsc --noEmit --pretty false -p . (in .): passed"),
        "{project}"
    );

    let broken = format!("{MAIN}const wrong: string = total;\n");
    let note = write(&run, "src/main.ts", &broken).await;
    assert!(
        note.starts_with("the write succeeded; it introduced these problems:"),
        "{note}"
    );
    assert!(
        note.contains(
            "src/main.ts:7: error[2322]: Type 'number' is not assignable to type 'string'."
        ),
        "{note}"
    );
    assert!(note.contains("| const wrong: string = total;"), "{note}");

    // The file and the project now show it.
    let file = lsp(
        &run,
        json!({"action": "diagnostics", "file": "src/main.ts"}),
    )
    .await;
    assert!(file.starts_with("1 problem(s) in src/main.ts:"), "{file}");
    assert!(file.contains("src/main.ts:7: error[2322]"), "{file}");
    let project = lsp(&run, json!({"action": "diagnostics", "file": "*"})).await;
    assert!(project.contains("exit code 2"), "{project}");
    assert!(
        project.contains(
            "src/main.ts(7,7): error TS2322: Type 'number' is not assignable to type 'string'."
        ),
        "{project}"
    );

    // Moved down: the same problem, not reported again.
    let moved = format!("{MAIN}\n\n\nconst wrong: string = total;\n");
    let note = write(&run, "src/main.ts", &moved).await;
    assert!(!note.contains("2322"), "{note}");

    // Fixed, then brought back: reported again.
    let note = write(&run, "src/main.ts", MAIN).await;
    assert!(!note.contains("introduced"), "{note}");
    let note = write(&run, "src/main.ts", &broken).await;
    assert!(note.contains("src/main.ts:7: error[2322]"), "{note}");
    let note = write(&run, "src/main.ts", MAIN).await;
    assert!(!note.contains("introduced"), "{note}");

    // A changed signature breaks the caller in the other open file.
    let changed = SHAPES.replace(
        "totalArea(shapes: Shape[])",
        "totalArea(shapes: Shape[], scale: number)",
    );
    let note = write(&run, "src/shapes.ts", &changed).await;
    assert!(note.contains("src/main.ts (another open file)"), "{note}");
    assert!(note.contains("src/main.ts:5: error[2554]"), "{note}");
    run.shutdown().await;
}

const LIB: &str = "export function scale(x: number): number {\n  return x * 2;\n}\n";
const LIB_CALLER: &str = "import { scale } from \"./lib\";\n\nexport const a = scale(1);\n";
const UTIL_CALLER: &str = "import { scale } from \"./lib\";\n\nexport function twice(y: number): number {\n  return scale(scale(y));\n}\n";

/// lib.ts exports `scale`, called in main.ts and util.ts, which the run
/// never opens.
fn callers_project(lsp: serde_json::Value) -> Option<(tempfile::TempDir, gantry_core::Run)> {
    if !typescript() {
        return None;
    }
    Some(project(
        &[
            ("tsconfig.json", TSCONFIG),
            ("src/lib.ts", LIB),
            ("src/main.ts", LIB_CALLER),
            ("src/util.ts", UTIL_CALLER),
        ],
        lsp,
    ))
}

/// How many requests the server serving `file` has been sent, by method.
async fn requests(run: &gantry_core::Run, file: &str) -> std::collections::BTreeMap<String, u64> {
    let path = run.workspace().resolve(file).unwrap();
    let server = gantry_lsp::Supervisor::of(run)
        .unwrap()
        .server_for(&path)
        .await
        .unwrap();
    server.client().transport().requests_sent()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_signature_reaches_callers_in_files_never_opened() {
    let Some((_dir, run)) = callers_project(json!({})) else {
        return;
    };
    // As read_file does, and the edit right after it.
    let lib = run.workspace().resolve("src/lib.ts").unwrap();
    gantry_lsp::touch(&run, &lib);
    let changed = LIB.replace("x: number)", "x: number, k: number)");
    let note = write(&run, "src/lib.ts", &changed).await;
    assert!(
        note.starts_with("the write succeeded; it introduced these problems:"),
        "{note}"
    );
    assert!(
        note.contains("src/main.ts (uses what the write changed)")
            && note.contains("src/main.ts:3: error[2554]: Expected 2 arguments, but got 1."),
        "{note}"
    );
    assert!(
        note.contains("src/util.ts (uses what the write changed)")
            && note.contains("src/util.ts:4: error[2554]"),
        "{note}"
    );
    assert!(!note.contains("no earlier diagnostics"), "{note}");
    assert!(
        !note.contains("did not arrive") && !note.contains("not checked again"),
        "{note}"
    );

    // Warm: back, then the same change again is reported again.
    let note = write(&run, "src/lib.ts", LIB).await;
    assert!(!note.contains("introduced"), "{note}");
    let note = write(&run, "src/lib.ts", &changed).await;
    assert!(
        note.contains("src/main.ts:3: error[2554]") && note.contains("src/util.ts:4: error[2554]"),
        "{note}"
    );
    // Back again: the callers are fixed, nothing is new.
    let note = write(&run, "src/lib.ts", LIB).await;
    assert!(!note.contains("introduced"), "{note}");

    // A write that does not need them closes the files opened for the
    // earlier ones; the next that does opens them again, with a baseline.
    let body = LIB.replace("x * 2", "x * 3");
    write(&run, "src/lib.ts", &body).await;
    let status = lsp(&run, json!({"action": "status"})).await;
    assert!(status.contains(", 1 open file(s)"), "{status}");
    let note = write(
        &run,
        "src/lib.ts",
        &body.replace("x: number)", "x: number, k: number)"),
    )
    .await;
    assert!(
        note.contains("src/main.ts:3: error[2554]") && note.contains("src/util.ts:4: error[2554]"),
        "{note}"
    );
    assert!(!note.contains("no earlier diagnostics"), "{note}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_inside_a_function_body_asks_the_server_nothing() {
    let Some((_dir, run)) = callers_project(json!({})) else {
        return;
    };
    let lib = run.workspace().resolve("src/lib.ts").unwrap();
    gantry_lsp::touch(&run, &lib);
    let before = requests(&run, "src/lib.ts").await;
    let note = write(&run, "src/lib.ts", &LIB.replace("x * 2", "x * 3")).await;
    assert!(!note.contains("main.ts"), "{note}");
    let after = requests(&run, "src/lib.ts").await;
    let references = |counts: &std::collections::BTreeMap<String, u64>| {
        counts.get("textDocument/references").copied().unwrap_or(0)
    };
    assert_eq!(references(&before), references(&after), "{after:?}");
    // The declarations carried over the edit: the next one asks nothing.
    let note = write(&run, "src/lib.ts", &LIB.replace("x * 2", "x * 4")).await;
    assert!(!note.contains("main.ts"), "{note}");
    let last = requests(&run, "src/lib.ts").await;
    assert_eq!(after, last, "a body edit sent requests");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookup_can_be_switched_off() {
    let Some((_dir, run)) = callers_project(json!({"dependents": false})) else {
        return;
    };
    let lib = run.workspace().resolve("src/lib.ts").unwrap();
    gantry_lsp::touch(&run, &lib);
    let changed = LIB.replace("x: number)", "x: number, k: number)");
    let note = write(&run, "src/lib.ts", &changed).await;
    assert!(!note.contains("main.ts"), "{note}");
    assert_eq!(
        requests(&run, "src/lib.ts")
            .await
            .get("textDocument/references"),
        None
    );
    run.shutdown().await;
}
