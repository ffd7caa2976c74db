//! `token create|list|delete|generate`, as kubeadm's token commands.

use std::time::SystemTime;

use k8s_bootstrap::bootstrap_token::{BootstrapToken, KubeadmToken};
use k8s_bootstrap::token;

use crate::args::{CreateArgs, DeleteArgs, ListArgs, OutputFormat, TokenCommand};
use crate::error::CliError;
use crate::{kubeconfig, output};

pub(crate) async fn run(command: TokenCommand) -> Result<(), CliError> {
    match command {
        TokenCommand::Generate => {
            let t = token::generate()?;
            output::print(&format!("{t}\n"))
        }
        TokenCommand::Create(args) => create(args).await,
        TokenCommand::List(args) => list(&args).await,
        TokenCommand::Delete(args) => delete(&args).await,
    }
}

/// The wall clock, the `now` the drivers take.
#[allow(
    clippy::disallowed_methods,
    reason = "the command line is where the clock is read"
)]
fn now() -> SystemTime {
    SystemTime::now()
}

async fn create(args: CreateArgs) -> Result<(), CliError> {
    let token = match &args.token {
        Some(s) => s
            .parse::<BootstrapToken>()
            .map_err(|source| CliError::InvalidToken {
                what: "token create <TOKEN>",
                source,
            })?,
        None => token::generate()?,
    };
    let mut options = KubeadmToken::new(Some(token.clone()));
    options.description = args.description;
    if let Some(ttl) = args.ttl {
        options.ttl = Some(ttl);
    }
    options.usages = args.usages;
    options.groups = args.groups;
    // The flags are checked as token::create checks them (kubeadm's rules), before the
    // kubeconfig is read or the server asked: a usage error.
    options
        .clone()
        .with_defaults()
        .validate("token")
        .map_err(|e| CliError::Usage(flag_terms(&e)))?;

    let (client, config) = kubeconfig::client(&args.cluster).await?;
    // Built before creating, so a kubeconfig without a CA does not leave a token behind.
    let join = if args.print_join_command {
        Some(kubeconfig::join_command(
            &config,
            &token,
            args.join_command_format,
        )?)
    } else {
        None
    };
    let api = token::secrets_api(client);
    let created = token::create(&api, options, now()).await?;
    match (join, args.output) {
        (Some(line), _) => output::print(&format!("{line}\n")),
        (None, OutputFormat::Text) => output::print(&format!("{}\n", created.token())),
        (None, format) => output::print(&output::tokens(
            format,
            std::slice::from_ref(created.options()),
        )?),
    }
}

async fn list(args: &ListArgs) -> Result<(), CliError> {
    let (client, _) = kubeconfig::client(&args.cluster).await?;
    let api = token::secrets_api(client);
    let listed = token::list(&api, now()).await?;
    for skipped in &listed.skipped {
        eprintln!(
            "warning: skipping bootstrap token secret {:?}: {}",
            skipped.name, skipped.error
        );
    }
    if listed.truncated {
        eprintln!(
            "warning: only the first {} bootstrap token secrets are listed",
            token::MAX_LISTED_SECRETS
        );
    }
    match args.output {
        OutputFormat::Text => output::print(&listed.to_table()),
        format => output::print(&output::tokens(format, &listed.tokens)?),
    }
}

async fn delete(args: &DeleteArgs) -> Result<(), CliError> {
    // Every argument is checked before the kubeconfig is read (none is echoed: it may be a
    // mistyped secret).
    for (i, arg) in args.tokens.iter().enumerate() {
        if k8s_bootstrap::bootstrap_token::parse_delete_argument(arg).is_err() {
            return Err(CliError::Usage(format!(
                "token delete: argument {}: {}",
                i.saturating_add(1),
                token::Error::DeleteArgument
            )));
        }
    }
    let (client, _) = kubeconfig::client(&args.cluster).await?;
    let api = token::secrets_api(client);
    for arg in &args.tokens {
        let id = token::delete(&api, arg).await?;
        output::print(&format!("bootstrap token {:?} deleted\n", id.as_str()))?;
    }
    Ok(())
}

/// kubeadm's field errors for the options (`token.usages: Invalid value: ...`) in the flags'
/// terms (`--usages "signing,auth": invalid bootstrap token usage string: auth, ...`).
fn flag_terms(e: &k8s_bootstrap::bootstrap_token::Error) -> String {
    let k8s_bootstrap::bootstrap_token::Error::Validation(errors) = e else {
        return e.to_string();
    };
    let mut out = Vec::new();
    for field in errors {
        let flag = match field.path.strip_prefix("token") {
            Some(".usages") => "--usages",
            Some(".groups") => "--groups",
            Some(".token") => "<TOKEN>",
            _ => "--ttl",
        };
        if field.value.is_empty() {
            out.push(format!("{flag}: {}", field.detail));
        } else {
            out.push(format!("{flag} {}: {}", field.value, field.detail));
        }
    }
    out.join("; ")
}
