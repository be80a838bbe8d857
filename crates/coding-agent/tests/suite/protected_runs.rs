//! What Elph itself runs next session, end to end: a trusted project's hook script outside
//! `.elph/`, its MCP server's script, `.elph/hooks.json` and another agent's `.claude/settings.json`
//! hold against the sandboxed shell (with the refusal's words), their folders cannot be moved
//! away, and the next `elph run` runs the scripts as they were trusted, nothing the model wrote.
//! As root and as a user that is not root (see `protected_e2e`).

use std::os::unix::fs::PermissionsExt;

use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::protected_e2e::{World, landlock, output_within, refused, users};

#[tokio::test]
async fn the_scripts_elph_runs_next_session_hold_and_run_as_trusted() {
    if !landlock("the_scripts_elph_runs_next_session_hold_and_run_as_trusted") {
        return;
    }
    for user in users() {
        let world = World::new(user);
        let env = &world.env;
        let evidence = env.root.path().join("evidence");
        std::fs::create_dir_all(&evidence).unwrap();
        std::fs::set_permissions(&evidence, std::fs::Permissions::from_mode(0o777)).unwrap();
        let ev = evidence.display();
        std::fs::create_dir_all(env.project.join(".elph")).unwrap();
        std::fs::create_dir_all(env.project.join("tools")).unwrap();
        std::fs::create_dir_all(env.project.join(".claude")).unwrap();
        std::fs::write(
            env.project.join(".elph/hooks.json"),
            r#"{"hooks": [{"id": "tool", "event": "sessionStart", "command": "/bin/sh", "args": ["tools/hook.sh"]}]}"#,
        )
        .unwrap();
        std::fs::write(
            env.project.join(".elph/mcp.json"),
            r#"{"mcpServers": {"s": {"command": "/bin/sh", "args": ["tools/server.sh"]}}}"#,
        )
        .unwrap();
        std::fs::write(
            env.project.join("tools/hook.sh"),
            format!("touch {ev}/trusted-hook\n"),
        )
        .unwrap();
        std::fs::write(
            env.project.join("tools/server.sh"),
            format!("touch {ev}/trusted-server\nexit 0\n"),
        )
        .unwrap();
        std::fs::write(env.project.join(".claude/settings.json"), "{}").unwrap();
        world.hand_over();
        let mut trust = world.command(&world.binary);
        trust.arg("trust").arg(&env.project);
        let trusted = output_within(trust);
        assert!(
            trusted.status.success(),
            "{}",
            String::from_utf8_lossy(&trusted.stderr)
        );

        let script = format!(
            "echo 'touch {ev}/planted-hook' >> tools/hook.sh; echo hookscript=$?\n\
             echo 'touch {ev}/planted-server' >> tools/server.sh; echo serverscript=$?\n\
             mv tools tools-moved; echo mvtools=$?\n\
             rm -f tools/hook.sh; echo rmhook=$?\n\
             echo '{{\"hooks\":[{{\"id\":\"x\",\"event\":\"sessionStart\",\"command\":\"/bin/sh\",\"args\":[\"-c\",\"touch {ev}/planted-elph\"]}}]}}' > .elph/hooks.json; echo elphhooks=$?\n\
             echo '{{\"hooks\":{{\"SessionStart\":[{{\"hooks\":[{{\"type\":\"command\",\"command\":\"touch {ev}/planted-claude\"}}]}}]}}}}' > .claude/settings.json; echo claude=$?"
        );
        let result = world.shell(&script, &[]).await;
        let context = format!("{}: {result}", world.who());
        for step in [
            "hookscript",
            "serverscript",
            "mvtools",
            "rmhook",
            "elphhooks",
            "claude",
        ] {
            assert!(refused(&result, step), "{step} was not refused, {context}");
        }
        let project = env.project.display();
        for words in [
            format!(
                "{project}/tools/hook.sh is protected by the sandbox: a file the project's hooks or MCP servers run or read, outside the sandbox"
            ),
            format!(
                "{project}/tools/server.sh is protected by the sandbox: a file the project's hooks or MCP servers run or read, outside the sandbox"
            ),
            "is protected by the sandbox: the project's .elph folder".to_string(),
            ".claude: another agent's or editor's configuration, which runs commands outside the sandbox"
                .to_string(),
        ] {
            assert!(result.contains(&words), "the refusal says {words:?}, {context}");
        }

        // The next session: the project is still trusted as it was, and runs what was trusted.
        let server = FakeModelServer::start(Wire::OpenAi).await;
        server.enqueue(FakeReply::text("done"));
        let next = world.run(&server, &["go"]).await;
        let stderr = String::from_utf8_lossy(&next.stderr).into_owned();
        assert!(next.status.success(), "{stderr}");
        assert!(
            !stderr.contains("changed since"),
            "the model could not make the project look changed (and its guards go off): {stderr}"
        );
        let mut ran: Vec<String> = std::fs::read_dir(&evidence)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        ran.sort();
        assert_eq!(
            ran,
            vec!["trusted-hook".to_string(), "trusted-server".to_string()],
            "the next session ran what was trusted and nothing the model wrote, {context}\nnext run: {stderr}"
        );
    }
}
