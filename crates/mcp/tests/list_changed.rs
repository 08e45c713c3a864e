//! A family that adds a tool while the run is served, and an MCP client
//! (rmcp's own, over an in-process pipe) that is told the list changed and
//! then sees the new tool: by a notification on protocol 2025-11-25, on
//! its `subscriptions/listen` stream on 2026-07-28.

use std::sync::Arc;
use std::time::Duration;

use gantry_core::{
    Family, PlainFamily, Run, RunBuilder, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec,
    Workspace, async_trait,
};
use rmcp::ClientHandler;
use rmcp::model::{CallToolRequestParams, ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RoleClient, RunningService,
};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::mpsc;

/// No parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nothing {}

/// A tool that, when called, registers `late` in its own run.
struct Appear;

#[async_trait]
impl Tool for Appear {
    type Params = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("appear", "Appear", Tier::Read, "Adds the tool `late`.")
    }

    fn describe(&self, _: &Nothing) -> String {
        "add `late`".into()
    }

    async fn execute(&self, _: Nothing, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        ctx.run
            .change_tools(|registry| registry.register(Arc::new(Late)))
            .map_err(ToolError::failed)?;
        Ok(ToolResult::text("added"))
    }
}

/// The tool that appears.
struct Late;

#[async_trait]
impl Tool for Late {
    type Params = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("late", "Late", Tier::Read, "Came late.")
    }

    fn describe(&self, _: &Nothing) -> String {
        "answer".into()
    }

    async fn execute(&self, _: Nothing, _: ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text("here"))
    }
}

/// The test family: `appear`, wired as the assembly wires families.
const TEST_FAMILY: PlainFamily =
    PlainFamily::new("test", |builder: RunBuilder| builder.tool(Appear));

/// A client that forwards the list-changed notifications it is sent
/// outside a subscription to the test.
struct Listener(mpsc::UnboundedSender<()>);

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

/// A client of `lifecycle` (the handshake, or 2026-07-28's discovery) connected to `gantry_mcp::serve_streams` over an
/// in-process pipe, serving a run of [`TEST_FAMILY`]; its unsolicited
/// list-changed notifications; the server's task.
async fn connect(
    lifecycle: ClientLifecycleMode,
) -> (
    RunningService<RoleClient, Listener>,
    mpsc::UnboundedReceiver<()>,
    tokio::task::JoinHandle<anyhow::Result<()>>,
    tempfile::TempDir,
) {
    let ws = gantry_core::testing::workspace_with::<&str>(&[]);
    let root = ws.path().to_path_buf();
    let factory: gantry_mcp::RunFactory = Arc::new(move |_human, _origin| {
        let root = root.clone();
        Box::pin(async move {
            let builder = Run::builder(Workspace::new(&root)?);
            Ok(TEST_FAMILY
                .wire(builder)
                .await
                .map_err(|e| anyhow::anyhow!(e))?
                .build())
        })
    });
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let server = tokio::spawn(gantry_mcp::serve_streams(
        factory,
        server_read,
        server_write,
    ));
    let (changed, receiver) = mpsc::unbounded_channel();
    let client = Listener(changed)
        .serve_with_lifecycle(client_end, lifecycle)
        .await
        .unwrap();
    (client, receiver, server, ws)
}

fn names(tools: Vec<rmcp::model::Tool>) -> Vec<String> {
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

/// Calls `appear` and checks that `late` is listed afterwards.
async fn add_late(client: &RunningService<RoleClient, Listener>) {
    assert_eq!(names(client.list_all_tools().await.unwrap()), ["appear"]);
    client
        .call_tool(CallToolRequestParams::new("appear"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_tool_added_at_run_time_is_announced_and_listed() {
    let (client, mut changed, server, _ws) = connect(ClientLifecycleMode::Initialize).await;
    add_late(&client).await;
    tokio::time::timeout(Duration::from_secs(10), changed.recv())
        .await
        .expect("no tools/list_changed within 10 s")
        .unwrap();
    assert_eq!(
        names(client.list_all_tools().await.unwrap()),
        ["appear", "late"]
    );
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn on_2026_07_28_the_change_comes_on_the_listen_stream_only() {
    let (client, mut unsolicited, server, _ws) = connect(ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    })
    .await;
    let mut subscription = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen is served");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    add_late(&client).await;
    let notification = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("no tools/list_changed on the stream within 10 s")
        .unwrap();
    assert!(
        matches!(
            notification,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{notification:?}"
    );
    assert_eq!(
        names(client.list_all_tools().await.unwrap()),
        ["appear", "late"]
    );
    assert!(
        unsolicited.try_recv().is_err(),
        "a 2026-07-28 client hears of changes on its listen stream, not besides it"
    );
    subscription.cancel().await.unwrap();
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}
