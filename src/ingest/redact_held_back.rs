//! A held-back set of secrets in everyday forms, written before the redaction that handles
//! them and independently of it: each case is a Claude Code session (the real record shapes,
//! results arriving in later records) read through [`read_file`] like any log, and the test
//! looks only at what would be stored. A secret must not be found anywhere in it; a
//! look-alike must come out unchanged (over-redaction turns a value into a parameter).

use std::path::Path;

use serde_json::{Value, json};

use super::adapters::Item;
use super::formats;
use super::reader::{ReadError, ReadOptions, read_file};
use super::redact::Redactor;
use super::store::{Batch, Checkpoint};

/// Deterministic fake secrets (xorshift), never real keys and not written out in the source.
struct Fake(u64);

impl Fake {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn s(&mut self, alphabet: &str, n: usize) -> String {
        let a: Vec<char> = alphabet.chars().collect();
        loop {
            let s: String = (0..n)
                .map(|_| a[(self.next() % a.len() as u64) as usize])
                .collect();
            let has = |f: fn(&u8) -> bool| s.bytes().any(|b| f(&b));
            let wants = |f: fn(&u8) -> bool| alphabet.bytes().any(|b| f(&b));
            let ok = [
                u8::is_ascii_uppercase as fn(&u8) -> bool,
                u8::is_ascii_lowercase,
                u8::is_ascii_digit,
            ]
            .iter()
            .all(|f| !wants(*f) || has(*f));
            if ok {
                return s;
            }
        }
    }

    fn alnum(&mut self, n: usize) -> String {
        self.s(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            n,
        )
    }

    fn b64(&mut self, n: usize) -> String {
        self.s(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            n,
        )
    }
}

/// One tool call of a session and what it printed.
struct Call {
    tool: &'static str,
    input: Value,
    output: String,
}

fn bash(command: &str, output: &str) -> Call {
    Call {
        tool: "Bash",
        input: json!({"command": command, "description": "run"}),
        output: output.to_owned(),
    }
}

fn tool(tool: &'static str, input: Value, output: &str) -> Call {
    Call {
        tool,
        input,
        output: output.to_owned(),
    }
}

/// The session as Claude Code writes it: an assistant record with the tool_use, then a user
/// record with its tool_result.
fn session_text(session: &str, calls: &[Call]) -> String {
    let mut text = String::new();
    for (i, call) in calls.iter().enumerate() {
        let id = format!("toolu_held{i:04}");
        let base = json!({"isSidechain": false, "userType": "external", "cwd": "/home/dev/app",
                          "sessionId": session, "version": "1.0.98"});
        let mut a = base.clone();
        a["parentUuid"] = if i == 0 {
            Value::Null
        } else {
            json!(format!("u-{}", i - 1))
        };
        a["type"] = json!("assistant");
        a["uuid"] = json!(format!("a-{i}"));
        a["timestamp"] = json!("2026-01-10T10:00:00Z");
        a["message"] = json!({"id": format!("msg_{i}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [{"type": "tool_use", "id": id, "name": call.tool, "input": call.input}]});
        let mut u = base;
        u["parentUuid"] = json!(format!("a-{i}"));
        u["type"] = json!("user");
        u["uuid"] = json!(format!("u-{i}"));
        u["timestamp"] = json!("2026-01-10T10:00:01Z");
        u["message"] = json!({"role": "user", "content": [
            {"tool_use_id": id, "type": "tool_result", "content": call.output, "is_error": false}]});
        text.push_str(&format!("{a}\n{u}\n"));
    }
    text
}

/// Reads `path` (from `previous`, if given) and returns the batches.
fn read(path: &Path, previous: Option<&Checkpoint>, complete: bool) -> Vec<Batch> {
    let format = formats::by_name("claude-code").expect("claude-code format");
    let redactor = Redactor::new();
    let options = ReadOptions {
        complete,
        ..ReadOptions::default()
    };
    let mut batches = Vec::new();
    read_file::<ReadError>(
        path,
        "held-back",
        format,
        previous,
        &mut super::reader::nothing_known,
        &options,
        &redactor,
        |b| {
            batches.push(b);
            Ok(())
        },
    )
    .expect("read");
    batches
}

/// Everything a batch would store, as text: the items and the checkpoint's parser state.
fn stored_text(batches: &[Batch]) -> String {
    let mut text = String::new();
    for batch in batches {
        for item in &batch.items {
            match item {
                Item::Action(a) => {
                    text.push_str(&a.input.to_string());
                    if let Some(r) = &a.result {
                        text.push_str(&r.output);
                    }
                }
                Item::Result(r) => text.push_str(&r.result.output),
                Item::SessionLink { .. } => {}
            }
            text.push('\n');
        }
        if let Some(state) = &batch.checkpoint.parser_state {
            text.push_str(&state.to_string());
        }
    }
    text
}

/// The stored (input, output) of each call, in order.
fn stored_calls(batches: &[Batch]) -> Vec<(Value, String)> {
    let mut calls: Vec<(Option<String>, Value, String)> = Vec::new();
    for item in batches.iter().flat_map(|b| &b.items) {
        match item {
            Item::Action(a) => calls.push((
                a.call_id.clone(),
                a.input.clone(),
                a.result
                    .as_ref()
                    .map(|r| r.output.clone())
                    .unwrap_or_default(),
            )),
            Item::Result(r) => {
                if let Some(c) = calls
                    .iter_mut()
                    .find(|c| c.0.as_deref() == Some(&r.call_id))
                {
                    c.2 = r.result.output.clone();
                }
            }
            Item::SessionLink { .. } => {}
        }
    }
    calls.into_iter().map(|(_, i, o)| (i, o)).collect()
}

/// A held-back case: a session whose stored form must not hold `secrets`.
struct Held {
    name: String,
    calls: Vec<Call>,
    secrets: Vec<String>,
}

fn held(name: &str, calls: Vec<Call>, secrets: &[&String]) -> Held {
    Held {
        name: name.to_owned(),
        calls,
        secrets: secrets.iter().map(|s| (*s).clone()).collect(),
    }
}

/// A one-command case: `{S}` in the command stands for the secret.
fn cmd(f: &mut Fake, template: &str) -> Held {
    let s = f.alnum(22);
    held(
        template,
        vec![bash(&template.replace("{S}", &s), "")],
        &[&s],
    )
}

fn secret_cases() -> Vec<Held> {
    let mut f = Fake(0x5EC2_E75A_1234_0001);
    let mut cases: Vec<Held> = [
        // Values given to secret-taking options and sub-commands.
        "aws configure set aws_secret_access_key {S}",
        "aws configure set aws_session_token {S} --profile prod",
        "aws --profile ci configure set aws_secret_access_key \"{S}\"",
        "curl --oauth2-bearer {S} https://api.example.com/v1/me",
        "curl -s --oauth2-bearer \"{S}\" -X POST https://api.example.com/v1/jobs",
        "htpasswd -b /etc/nginx/.htpasswd admin {S}",
        "htpasswd -bc .htpasswd alice '{S}'",
        "htpasswd -nb deploy {S}",
        "sudo htpasswd -bB -C 12 /etc/apache2/.htpasswd bob {S}",
        "mysql -h db -u root -p{S} -e 'show databases'",
        "mysqldump --user=root --password={S} shop > shop.sql",
        "sshpass -p{S} scp backup.tgz deploy@10.0.0.7:/srv/",
        "docker login --username ci --password {S} registry.example.com",
        "git config --global github.token {S}",
        "npm config set //registry.npmjs.org/:_authToken {S}",
        "npm config set //npm.pkg.github.com/:_authToken={S}",
        "yarn config set npmAuthToken {S}",
        "kubectl create secret generic db-creds --from-literal=username=app --from-literal=password={S}",
        "kubectl create secret generic stripe --from-literal=live={S} -n payments",
        "openssl enc -aes-256-cbc -salt -in backup.tar -out backup.enc -k {S}",
        "openssl rsa -in server.key -out server.enc.key -aes256 -passout pass:{S}",
        "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -password pass:{S}",
        "PGPASSWORD={S} pg_dump -h db -U app prod > prod.sql",
        "psql \"postgresql://app:{S}@db.internal:5432/prod\" -c '\\dt'",
        "vault kv put secret/app db_password={S}",
        "vault kv put secret/payments stripe={S}",
        "az login -u ops@example.com -p {S}",
        "az login --service-principal -u 1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d -p {S} --tenant acme.onmicrosoft.com",
        "heroku config:set DATABASE_PASSWORD={S} -a shop",
        "gh secret set DEPLOY_KEY --body {S}",
        "gh secret set NPM_TOKEN -b\"{S}\"",
        "echo \"{S}\" | docker login ghcr.io -u octocat --password-stdin",
        "echo {S} | gh auth login --with-token",
        "printf '%s' '{S}' | docker login -u ci --password-stdin registry.example.com",
        "ldapsearch -x -H ldap://ldap -D cn=admin,dc=example,dc=org -w {S} -b dc=example,dc=org",
        "sqlcmd -S db -U sa -P {S} -Q \"SELECT 1\"",
        "smbclient //fs/share -U alice%{S} -c ls",
        "rabbitmqctl add_user deploy {S}",
        "rabbitmqctl change_password guest {S}",
        "keytool -importcert -alias ca -file ca.pem -keystore truststore.jks -storepass {S} -noprompt",
        "zip -P {S} -r archive.zip docs/",
        "7z a -p{S} backup.7z data/",
        "psql -h db -U postgres -c \"ALTER USER app WITH PASSWORD '{S}'\"",
        "mysql -u root -e \"CREATE USER 'app'@'%' IDENTIFIED BY '{S}'\"",
        "curl -x http://proxy:3128 --proxy-user ops:{S} https://example.com",
        "wget --user=deploy --password={S} https://files.example.com/a.tgz",
        "cargo login {S}",
        "poetry config pypi-token.pypi {S}",
        "composer config --global github-oauth.github.com {S}",
        "echo 'deploy:{S}' | sudo chpasswd",
        "mosquitto_pub -h broker -u sensor -P {S} -t temp -m 21",
        "skopeo copy --src-creds ci:{S} docker://a.example/b docker://c.example/d",
        "fly secrets set STRIPE_API={S} -a shop",
        "aws secretsmanager create-secret --name prod/db --secret-string {S}",
        "aws ssm put-parameter --name /prod/db/password --type SecureString --value {S}",
        "export DB_PASSWORD='{S}' && ./migrate.sh",
        "docker run -e POSTGRES_PASSWORD={S} -d postgres:16",
        "helm upgrade --install db bitnami/postgresql --set auth.postgresPassword={S}",
        "mysqladmin -u root password {S}",
        "unzip -P {S} archive.zip",
        "gpg --batch --yes --passphrase {S} -c notes.txt",
        "dotnet nuget add source https://nuget.example.com/v3/index.json -n corp -u ci -p {S}",
        "jarsigner -keystore release.jks -storepass {S} app.apk release",
    ]
    .iter()
    .map(|t| cmd(&mut f, t))
    .collect();

    // The output of a command that prints a secret (the export, if any, was elsewhere).
    for command in [
        "printenv SERVICE_PASSWORD",
        "echo $DB_PASSWORD",
        "echo \"${API_TOKEN}\"",
        "printf '%s\\n' \"$STRIPE_SECRET_KEY\"",
        "vault kv get -field=password secret/app",
        "pass show infra/db",
        "security find-generic-password -s ci -a deploy -w",
        "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d",
        "aws secretsmanager get-secret-value --secret-id prod/db --query SecretString --output text",
        "op read op://infra/db/password",
        "cat /run/secrets/db_password",
        "gcloud secrets versions access latest --secret=api-key",
    ] {
        let s = f.alnum(20);
        cases.push(held(
            &format!("output of {command}"),
            vec![bash(command, &format!("{s}\n"))],
            &[&s],
        ));
    }
    let s = f.alnum(18);
    cases.push(held(
        "output of env | grep",
        vec![bash(
            "env | grep -i password",
            &format!("DB_PASSWORD={s}\nPASSWORD_FILE=/run/pw\n"),
        )],
        &[&s],
    ));

    // Credential files, read with cat or the Read tool.
    let (s1, s2) = (f.alnum(16), f.alnum(24));
    cases.push(held(
        "cat ~/.netrc",
        vec![bash(
            "cat ~/.netrc",
            &format!(
                "machine api.example.com\n  login bob\n  password {s1}\nmachine github.com login octocat password {s2}\n"
            ),
        )],
        &[&s1, &s2],
    ));
    let s = f.alnum(20);
    cases.push(held(
        "Read ~/.netrc",
        vec![tool(
            "Read",
            json!({"file_path": "/home/dev/.netrc"}),
            &format!("     1→machine github.com login octocat password {s}\n"),
        )],
        &[&s],
    ));
    let (s1, s2) = (f.alnum(14), f.alnum(14));
    cases.push(held(
        "cat ~/.pgpass",
        vec![bash(
            "cat ~/.pgpass",
            &format!("db.internal:5432:prod:app:{s1}\n*:*:*:postgres:{s2}\n"),
        )],
        &[&s1, &s2],
    ));
    let s = f.alnum(14);
    cases.push(held(
        "Read ~/.pgpass",
        vec![tool(
            "Read",
            json!({"file_path": "/home/dev/.pgpass"}),
            &format!("     1→localhost:5432:*:app:{s}\n"),
        )],
        &[&s],
    ));
    // A kubeconfig: base64 of a PEM private key, and a bearer token.
    let key_b64 = format!("LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo{}", f.b64(600));
    let token = f.alnum(40);
    cases.push(held(
        "cat ~/.kube/config",
        vec![bash(
            "cat ~/.kube/config",
            &format!(
                "apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: prod\nusers:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM\n    client-key-data: {key_b64}\n- name: ci\n  user:\n    token: {token}\n"
            ),
        )],
        &[&key_b64, &token],
    ));
    let s = f.b64(40);
    cases.push(held(
        "cat ~/.aws/credentials",
        vec![bash(
            "cat ~/.aws/credentials",
            &format!(
                "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {s}\n"
            ),
        )],
        &[&s],
    ));
    let (auth, idt) = (f.b64(28), f.alnum(40));
    cases.push(held(
        "cat ~/.docker/config.json",
        vec![bash(
            "cat ~/.docker/config.json",
            &format!(
                "{{\n  \"auths\": {{\n    \"ghcr.io\": {{\n      \"auth\": \"{auth}\"\n    }},\n    \"registry.example.com\": {{\n      \"identitytoken\": \"{idt}\"\n    }}\n  }}\n}}\n"
            ),
        )],
        &[&auth, &idt],
    ));
    let s = f.alnum(20);
    cases.push(held(
        "cat ~/.git-credentials",
        vec![bash(
            "cat ~/.git-credentials",
            &format!("https://bob:{s}@github.com\n"),
        )],
        &[&s],
    ));
    let s = f.alnum(36);
    cases.push(held(
        "cat ~/.npmrc",
        vec![bash(
            "cat ~/.npmrc",
            &format!(
                "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={s}\n"
            ),
        )],
        &[&s],
    ));
    let s = f.alnum(30);
    cases.push(held(
        "cat ~/.pypirc",
        vec![bash(
            "cat ~/.pypirc",
            &format!("[pypi]\n  username = __token__\n  password = {s}\n"),
        )],
        &[&s],
    ));

    // Tool-call inputs.
    let s = f.alnum(20);
    cases.push(held(
        "Write ~/.netrc",
        vec![tool(
            "Write",
            json!({"file_path": "/home/dev/.netrc",
                   "content": format!("machine x.example.com login ci password {s}\n")}),
            "File created successfully at: /home/dev/.netrc",
        )],
        &[&s],
    ));
    let s = f.alnum(16);
    cases.push(held(
        "Write ~/.pgpass",
        vec![tool(
            "Write",
            json!({"file_path": "/home/dev/.pgpass", "content": format!("db:5432:prod:app:{s}\n")}),
            "File created successfully at: /home/dev/.pgpass",
        )],
        &[&s],
    ));
    let key_b64 = format!("LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2{}", f.b64(400));
    cases.push(held(
        "Write a kubeconfig",
        vec![tool(
            "Write",
            json!({"file_path": "/home/dev/app/deploy/kubeconfig.yaml",
                   "content": format!("users:\n- name: admin\n  user:\n    client-key-data: {key_b64}\n")}),
            "File created successfully",
        )],
        &[&key_b64],
    ));
    let s = f.alnum(32);
    cases.push(held(
        "Edit .env",
        vec![tool(
            "Edit",
            json!({"file_path": "/home/dev/app/.env", "old_string": "API_TOKEN=",
                   "new_string": format!("API_TOKEN={s}")}),
            "The file has been updated.",
        )],
        &[&s],
    ));
    let s = f.alnum(18);
    cases.push(held(
        "MultiEdit config.yaml",
        vec![tool(
            "MultiEdit",
            json!({"file_path": "/home/dev/app/config.yaml", "edits": [
                {"old_string": "password: changeme", "new_string": format!("password: {s}")}]}),
            "Applied 1 edit",
        )],
        &[&s],
    ));
    let s = f.b64(40);
    cases.push(held(
        "apply_patch adding a script",
        vec![tool(
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Add File: deploy.sh\n+#!/bin/sh\n+aws configure set aws_secret_access_key {s}\n*** End Patch\n")}),
            "Done!",
        )],
        &[&s],
    ));
    let s = f.alnum(20);
    cases.push(held(
        "Write a script with htpasswd",
        vec![tool(
            "Write",
            json!({"file_path": "/home/dev/app/setup.sh",
                   "content": format!("#!/bin/sh\nset -e\nhtpasswd -b /etc/nginx/.htpasswd admin {s}\n")}),
            "File created successfully",
        )],
        &[&s],
    ));

    // A value seen as a secret earlier in the session, used again.
    let s = f.alnum(20);
    cases.push(held(
        "export then echo",
        vec![
            bash(&format!("export DB_PASSWORD={s}"), ""),
            bash("echo $DB_PASSWORD", &format!("{s}\n")),
        ],
        &[&s],
    ));
    let s = f.alnum(24);
    cases.push(held(
        "export then the value in a Write",
        vec![
            bash(&format!("export SERVICE_SECRET='{s}'"), ""),
            tool(
                "Write",
                json!({"file_path": "/home/dev/app/src/config.ts",
                       "content": format!("export const service = {{ id: 'billing', key: '{s}' }};\n")}),
                "File created successfully",
            ),
        ],
        &[&s],
    ));
    let s = f.alnum(20);
    cases.push(held(
        "a secret in a command, then in a later command and output",
        vec![
            bash(&format!("mysql -uroot -p{s} -e 'select 1'"), "1\n"),
            bash(
                &format!("curl -d 'pw={s}' http://localhost:8080/login"),
                &format!("{{\"echo\": \"{s}\"}}"),
            ),
        ],
        &[&s],
    ));
    cases
}

/// Calls whose stored form must be what was logged.
fn survivor_calls() -> Vec<Call> {
    let mut calls: Vec<Call> = [
        "aws configure set region eu-west-1",
        "aws configure set output json --profile dev",
        "aws configure get aws_secret_access_key",
        "htpasswd -D /etc/nginx/.htpasswd alice",
        "htpasswd -c /etc/nginx/.htpasswd alice",
        "curl --oauth2-bearer \"$TOKEN\" https://api.example.com",
        "kubectl create configmap app --from-literal=mode=debug",
        "kubectl create secret generic tls --from-file=tls.crt=./cert.pem --from-file=tls.key=./key.pem",
        "vault kv get secret/app",
        "git config --global credential.helper store",
        "git config --global user.email ann@example.com",
        "npm config set registry https://registry.npmjs.org/",
        "docker login -u ci --password-stdin ghcr.io < token.txt",
        "mysql -u root -p shop",
        "ldapsearch -x -H ldap://ldap -b dc=example,dc=org uid=alice",
        "openssl req -new -key server.key -out server.csr -subj /CN=example.com",
        "openssl enc -d -aes-256-cbc -in backup.enc -out backup.tar -pass file:/run/secrets/backup",
        "heroku config:set NODE_ENV=production WEB_CONCURRENCY=2 -a shop",
        "gh secret list --repo acme/app",
        "zip -r archive.zip docs/ -x '*.tmp'",
        "7z x backup.7z -odata",
        "psql -h db -U app -d prod -c 'select count(*) from users'",
        "keytool -list -v -keystore truststore.jks",
        "cargo test -p toolsmith --lib",
        "rabbitmqctl list_users",
        "az login --use-device-code",
        "ssh -p 2222 deploy@host",
        "mkdir -p /tmp/x && cp -p a b",
        "unzip archive.zip -d out",
        "fly secrets list -a shop",
        "make test -j4",
        "docker run -e NODE_ENV=production -p 8080:80 nginx",
        "git push origin main",
        "npm run build -- --mode production",
        "psql -c \"ALTER TABLE users ADD COLUMN password_hash text\"",
        "kubectl get secrets -n payments",
        "aws s3 cp ./build s3://acme-site --recursive",
        "curl -u admin https://jenkins.example.com/api/json",
    ]
    .iter()
    .map(|c| bash(c, ""))
    .collect();
    calls.extend([
        bash("echo $HOME", "/home/dev\n"),
        bash("printenv PATH", "/usr/local/bin:/usr/bin:/bin\n"),
        bash(
            "echo \"Deploying version $VERSION\"",
            "Deploying version 1.4.2\n",
        ),
        bash("echo $TOKEN_COUNT", "5\n"),
        bash(
            "cat README.md",
            "# App\n\nReset your password from the settings page.\n",
        ),
        bash(
            "grep -rn password src/",
            "src/auth.py:12:def check_password(pw):\nsrc/auth.py:30:    password_hash = hash(pw)\n",
        ),
        bash(
            "git log --oneline -3",
            "3f2a9c1 fix: keep spans\n9e8d7c6 feat: json output\n1a2b3c4 chore: bump\n",
        ),
        bash(
            "cat ~/.gitconfig",
            "[user]\n\tname = Ann\n\temail = ann@example.com\n[credential]\n\thelper = store\n",
        ),
        bash(
            "grep -n main src/*.rs",
            "src/lib.rs:12:5:pub:fn main\nsrc/cli.rs:3:1:use:std\n",
        ),
        bash(
            "sed -n '1,20p' ~/.ssh/config",
            "Host github.com\n  User git\n  IdentityFile ~/.ssh/id_ed25519\n",
        ),
        bash(
            "cargo test 2>&1 | tail -3",
            "test result: ok. 12 passed; 0 failed; 0 ignored\n",
        ),
        bash(
            "psql -h db -U app -c 'select name, role from users limit 2'",
            " name  | role\n-------+-------\n alice | admin\n bob   | dev\n",
        ),
        tool(
            "Read",
            json!({"file_path": "/home/dev/app/src/db.rs"}),
            "     1→pub fn connect(url: &str) -> Pool {\n     2→    Pool::new(url)\n     3→}\n",
        ),
        tool(
            "Write",
            json!({"file_path": "/home/dev/app/docs/setup.md",
                   "content": "Put your password in ~/.pgpass as host:port:db:user:password.\n"}),
            "File created successfully",
        ),
    ]);
    calls
}

fn secrets_left(case: &Held, text: &str) -> Vec<String> {
    case.secrets
        .iter()
        .filter(|s| text.contains(s.as_str()))
        .cloned()
        .collect()
}

#[test]
fn held_back_secrets_never_reach_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = secret_cases();
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let path = dir.path().join(format!("held-{i}.jsonl"));
        let session = format!("00000000-0000-4000-8000-{i:012}");
        std::fs::write(&path, session_text(&session, &case.calls)).expect("write");
        let stored = stored_text(&read(&path, None, true));
        let left = secrets_left(case, &stored);
        if !left.is_empty() {
            failures.push(format!("{}: {left:?} left in\n  {stored}", case.name));
        }
    }
    let passed = cases.len() - failures.len();
    println!("held-back secrets: {passed}/{} redacted", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn held_back_look_alikes_are_stored_as_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = survivor_calls();
    let path = dir.path().join("survivors.jsonl");
    std::fs::write(
        &path,
        session_text("00000000-0000-4000-8000-00000000aaaa", &calls),
    )
    .expect("write");
    let stored = stored_calls(&read(&path, None, true));
    assert_eq!(stored.len(), calls.len());
    let mut failures = Vec::new();
    for (call, (input, output)) in calls.iter().zip(&stored) {
        if *input != call.input || *output != call.output {
            failures.push(format!(
                "{}\n  -> {input}\n  {output:?}",
                call.input["command"]
                    .as_str()
                    .map_or_else(|| call.input.to_string(), str::to_owned)
            ));
        }
    }
    let passed = calls.len() - failures.len();
    println!("held-back look-alikes: {passed}/{} kept", calls.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn held_back_a_secret_seen_before_a_restart_is_still_redacted_after_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut f = Fake(0x5EC2_E75A_1234_0002);
    let (s1, s2) = (f.alnum(20), f.alnum(26));
    let session = "00000000-0000-4000-8000-00000000bbbb";
    let first = session_text(
        session,
        &[
            bash(&format!("export DB_PASSWORD={s1}"), ""),
            bash(&format!("export GITHUB_TOKEN={s2}"), ""),
        ],
    );
    // The later part, with ids of its own (`session_text` numbers calls from 0).
    let later = session_text(
        session,
        &[
            bash("echo hi", "hi\n"),
            bash("echo hi", "hi\n"),
            bash("echo ok", &format!("{s1}\n")),
            bash(
                "git remote -v",
                &format!("origin https://x:{s2}@github.com/acme/app (fetch)\nsee {s2}\n"),
            ),
        ],
    )
    .lines()
    .skip(4)
    .map(|l| format!("{l}\n"))
    .collect::<String>();
    let path = dir.path().join(format!("{session}.jsonl"));
    std::fs::write(&path, &first).expect("write");
    let before = read(&path, None, false);
    let checkpoint = before.last().expect("a batch").checkpoint.clone();
    let stored_before = stored_text(&before);
    // The daemon stops here; the rest of the session is written while it is down.
    let mut all = first.clone();
    all.push_str(&later);
    std::fs::write(&path, &all).expect("append");
    let after = read(&path, Some(&checkpoint), false);
    let stored_after = stored_text(&after);
    let case = Held {
        name: String::new(),
        calls: Vec::new(),
        secrets: vec![s1.clone(), s2.clone()],
    };
    let left_before = secrets_left(&case, &stored_before);
    let left_after = secrets_left(&case, &stored_after);
    println!(
        "held-back restart: {} secrets left before, {} after",
        left_before.len(),
        left_after.len()
    );
    assert!(left_before.is_empty(), "{stored_before}");
    assert!(left_after.is_empty(), "{stored_after}");
    // What resuming stored is what a read of the whole file stores.
    let whole = read(&path, None, false);
    let tail: Vec<(Value, String)> = stored_calls(&whole).into_iter().skip(2).collect();
    assert_eq!(stored_calls(&after), tail);
}
