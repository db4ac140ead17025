/* toolpin install generator: turns a server command into an entry that runs it behind
 * `toolpin run --name N -- <argv>`, for every client. No network; text only, never markup.
 * The same rules and bytes as toolpin.clients.install_links (a test runs both).
 */
(function (root) {
  "use strict";

  var NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
  var ENV_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
  var SERVER_ID_RE = /^[0-9a-f]{16}$/;
  var ABSOLUTE_COMMAND_RE = /^(\/|[A-Za-z]:[\\/]|\\\\)/;
  var MAX_ARGS = 256;
  var MAX_ARG_CHARS = 4096;

  /* toolpin.core.render's unsafe ranges, plus tab, newline and carriage return. */
  var UNSAFE = [
    [0x0000, 0x0008], [0x0009, 0x000A], [0x000B, 0x000C], [0x000D, 0x000D],
    [0x000E, 0x001F], [0x007F, 0x009F], [0x00AD, 0x00AD], [0x034F, 0x034F],
    [0x061C, 0x061C], [0x115F, 0x1160], [0x17B4, 0x17B5], [0x180B, 0x180F],
    [0x200B, 0x200F], [0x2028, 0x202E], [0x2060, 0x206F], [0x3164, 0x3164],
    [0xD800, 0xDFFF], [0xFE00, 0xFE0F], [0xFEFF, 0xFEFF], [0xFFA0, 0xFFA0],
    [0xFFF9, 0xFFFB], [0x1BCA0, 0x1BCA3], [0x1D173, 0x1D17A], [0xE0000, 0xE0FFF]
  ];

  var CLIENTS = [
    "claude-code", "claude-desktop", "cursor", "cursor-web", "vscode", "vscode-insiders",
    "vscode-cli", "codex", "gemini", "windsurf", "lmstudio", "lmstudio-web", "goose"
  ];

  function InputError(message) {
    this.name = "InputError";
    this.message = message;
  }

  function unsafeCodePoint(text) {
    for (var i = 0; i < text.length; i++) {
      var cp = text.codePointAt(i);
      if (cp > 0xFFFF) {
        i++;
      }
      for (var r = 0; r < UNSAFE.length; r++) {
        if (cp >= UNSAFE[r][0] && cp <= UNSAFE[r][1]) {
          return true;
        }
      }
    }
    return false;
  }

  function codePoints(text) {
    return Array.from(text).length;
  }

  function checkArg(value, what) {
    if (!value && what === "the command") {
      throw new InputError("the server command is empty");
    }
    if (codePoints(value) > MAX_ARG_CHARS) {
      throw new InputError(what + " is longer than " + MAX_ARG_CHARS + " characters");
    }
    if (value.indexOf("$") !== -1) {
      throw new InputError(what + " contains '$', which most clients expand as a variable");
    }
    if (unsafeCodePoint(value)) {
      throw new InputError(
        what + " contains a control, newline, invisible or direction-changing character");
    }
  }

  function validate(req) {
    if (!NAME_RE.test(req.name)) {
      throw new InputError("the server name is not allowed");
    }
    if (req.argv.length === 0) {
      throw new InputError("no server command given (put it after --)");
    }
    if (req.argv.length > MAX_ARGS) {
      throw new InputError("the server command has more than " + MAX_ARGS + " arguments");
    }
    req.argv.forEach(function (arg, i) {
      checkArg(arg, i === 0 ? "the command" : "argument " + i);
    });
    if (req.launcher.length === 0 || !req.launcher[0]) {
      throw new InputError("the launcher is empty");
    }
    req.launcher.forEach(function (arg) { checkArg(arg, "the launcher"); });
    var seen = {};
    req.env.forEach(function (v) {
      if (v.indexOf("=") !== -1) {
        throw new InputError("--env takes a variable name only, never a value");
      }
      if (!ENV_RE.test(v)) {
        throw new InputError("not an environment variable name");
      }
      if (Object.prototype.hasOwnProperty.call(seen, v)) {
        throw new InputError("--env " + v + " is given twice");
      }
      seen[v] = true;
    });
  }

  var RUNNERS = ["npx", "bunx", "uvx", "pipx", "pnpm", "yarn", "node", "python", "python3",
    "deno", "uv"];
  var SUBCOMMANDS = ["run", "dlx", "exec", "x", "tool"];

  function defaultName(argv) {
    if (argv.length === 0) {
      return "server";
    }
    var token = argv[0];
    var runner = token.replace(/\\/g, "/").split("/").pop();
    if (RUNNERS.indexOf(runner) !== -1) {
      var rest = argv.slice(1).filter(function (a) {
        return a && a.charAt(0) !== "-" && SUBCOMMANDS.indexOf(a) === -1;
      });
      if (rest.length) {
        token = rest[0];
      }
    }
    token = token.replace(/\\/g, "/").replace(/\/+$/, "").split("/").pop();
    if (token.indexOf("==") !== -1) {
      token = token.split("==")[0];
    }
    if (token.slice(1).indexOf("@") !== -1) {
      token = token.charAt(0) + token.slice(1).split("@")[0];
    }
    token = token.replace(/^@+/, "");
    var suffixes = [".js", ".mjs", ".cjs", ".py", ".exe"];
    for (var i = 0; i < suffixes.length; i++) {
      var s = suffixes[i];
      if (token.length > s.length && token.slice(-s.length) === s) {
        token = token.slice(0, -s.length);
        break;
      }
    }
    token = token.replace(/[^A-Za-z0-9_.-]+/gu, "-");
    token = token.replace(/^[^A-Za-z0-9]+/, "").slice(0, 64);
    return NAME_RE.test(token) ? token : "server";
  }

  /* Python's shlex.quote / shlex.join. */
  function shQuote(s) {
    if (s === "") {
      return "''";
    }
    if (!/[^A-Za-z0-9_@%+=:,.\/-]/.test(s)) {
      return s;
    }
    return "'" + s.split("'").join("'\"'\"'") + "'";
  }

  function shJoin(argv) {
    return argv.map(shQuote).join(" ");
  }

  /* Python's shlex.split (POSIX mode): what the page accepts as a pasted command. */
  function shSplit(text) {
    var tokens = [];
    var token = null;
    var state = " ";
    var i = 0;
    var chars = Array.from(text);
    while (i < chars.length) {
      var c = chars[i];
      if (state === " ") {
        if (c === " " || c === "\t" || c === "\r" || c === "\n") {
          if (token !== null) {
            tokens.push(token);
            token = null;
          }
        } else if (c === "\\") {
          if (i + 1 >= chars.length) {
            throw new InputError("No escaped character");
          }
          token = (token || "") + chars[i + 1];
          i++;
        } else if (c === "'" || c === "\"") {
          token = token || "";
          state = c;
        } else {
          token = (token || "") + c;
        }
      } else if (state === "'") {
        if (c === "'") {
          state = " ";
        } else {
          token += c;
        }
      } else {
        if (c === "\"") {
          state = " ";
        } else if (c === "\\") {
          if (i + 1 >= chars.length) {
            throw new InputError("No escaped character");
          }
          var next = chars[i + 1];
          if (next !== "\"" && next !== "\\") {
            token += "\\";
          }
          token += next;
          i++;
        } else {
          token += c;
        }
      }
      i++;
    }
    if (state !== " ") {
      throw new InputError("No closing quotation");
    }
    if (token !== null) {
      tokens.push(token);
    }
    return tokens;
  }

  function uri(text) {
    return encodeURIComponent(text);
  }

  function b64(text) {
    var bytes = new TextEncoder().encode(text);
    var binary = "";
    for (var i = 0; i < bytes.length; i++) {
      binary += String.fromCharCode(bytes[i]);
    }
    return btoa(binary);
  }

  function tomlString(s) {
    return "\"" + s.replace(/\\/g, "\\\\").replace(/"/g, "\\\"") + "\"";
  }

  function tomlKey(s) {
    return /^[A-Za-z0-9_-]+$/.test(s) ? s : tomlString(s);
  }

  function tomlArray(items) {
    return "[" + items.map(tomlString).join(", ") + "]";
  }

  function proxied(req) {
    return req.launcher.concat(["run", "--name", req.name, "--"], req.argv);
  }

  function server(req, env) {
    var full = proxied(req);
    var entry = { command: full[0], args: full.slice(1) };
    if (env && Object.keys(env).length) {
      entry.env = env;
    }
    return entry;
  }

  function envMap(names, before, after) {
    var out = {};
    names.forEach(function (v) { out[v] = before + v + after; });
    return out;
  }

  function pretty(value) {
    return JSON.stringify(value, null, 2);
  }

  function generate(input) {
    var req = {
      argv: input.argv.slice(),
      name: input.name,
      env: (input.env || []).slice(),
      launcher: (input.launcher || ["toolpin"]).slice()
    };
    validate(req);
    var name = req.name;
    var env = req.env;
    var full = proxied(req);
    var command = full[0];
    var args = full.slice(1);
    var out = {};
    var notes = {};

    out["claude-code"] = shJoin(
      ["claude", "mcp", "add", "--transport", "stdio", name, "--"].concat(full));

    var desktop = { mcpServers: {} };
    desktop.mcpServers[name] = server(req, null);
    out["claude-desktop"] = pretty(desktop);

    var cursor = b64(JSON.stringify(server(req, envMap(env, "${env:", "}"))));
    var query = "name=" + uri(name) + "&config=" + uri(cursor);
    out.cursor = "cursor://anysphere.cursor-deeplink/mcp/install?" + query;
    out["cursor-web"] = "https://cursor.com/en-US/install-mcp?" + query;

    var vscode = { name: name, type: "stdio", command: command, args: args };
    if (env.length) {
      vscode.env = envMap(env, "${input:", "}");
      vscode.inputs = env.map(function (v) {
        return { type: "promptString", id: v, description: v, password: true };
      });
    }
    var vscodeJson = JSON.stringify(vscode);
    out.vscode = "vscode:mcp/install?" + uri(vscodeJson);
    out["vscode-insiders"] = "vscode-insiders:mcp/install?" + uri(vscodeJson);
    out["vscode-cli"] = shJoin(["code", "--add-mcp", vscodeJson]);

    var toml = "[mcp_servers." + tomlKey(name) + "]\n" +
      "command = " + tomlString(command) + "\n" +
      "args = " + tomlArray(args) + "\n";
    if (env.length) {
      toml += "env_vars = " + tomlArray(env) + "\n";
    }
    out.codex = toml;

    var gemini = { mcpServers: {} };
    gemini.mcpServers[name] = server(req, envMap(env, "${", "}"));
    out.gemini = pretty(gemini);

    var windsurf = { mcpServers: {} };
    windsurf.mcpServers[name] = server(req, envMap(env, "${env:", "}"));
    out.windsurf = pretty(windsurf);

    var lm = "name=" + uri(name) + "&config=" + uri(b64(JSON.stringify(server(req, null))));
    out.lmstudio = "lmstudio://add_mcp?" + lm;
    out["lmstudio-web"] = "https://lmstudio.ai/install-mcp?" + lm;

    var goose = ["cmd=" + uri(command)].concat(args.map(function (a) { return "arg=" + uri(a); }));
    goose.push("id=" + uri(name), "name=" + uri(name));
    goose.push("description=" + uri(name + " behind toolpin run"));
    env.forEach(function (v) { goose.push("env=" + uri(v + "=" + v)); });
    out.goose = "goose://extension?" + goose.join("&");

    if (env.length) {
      var names = env.join(", ");
      notes["claude-code"] = "Claude Code passes its own environment on: export " + names +
        " first.";
      notes["claude-desktop"] = "Claude Desktop has no variable mechanism: add " + names +
        " to this entry's env yourself; no secret value is ever put in a generated entry.";
      notes.lmstudio = "LM Studio has no variable mechanism: add " + names +
        " under env in mcp.json yourself.";
      notes["lmstudio-web"] = notes.lmstudio;
    }
    if (!ABSOLUTE_COMMAND_RE.test(req.launcher[0])) {
      var bare = "Claude Desktop does not read your shell's PATH, so a bare " +
        req.launcher[0] + " may not start: give its absolute path (`command -v " +
        req.launcher[0] + "` prints it).";
      notes["claude-desktop"] = env.length ? notes["claude-desktop"] + " " + bare : bare;
    }
    return {
      name: name, argv: req.argv, env: env, command: full, outputs: out, notes: notes
    };
  }

  var api = {
    CLIENTS: CLIENTS,
    InputError: InputError,
    defaultName: defaultName,
    generate: generate,
    shJoin: shJoin,
    shSplit: shSplit
  };

  /* ---- the page ------------------------------------------------------------------- */

  function byId(id) {
    return document.getElementById(id);
  }

  function splitList(text) {
    return text.split(/[\s,]+/).filter(function (s) { return s !== ""; });
  }

  function render() {
    var error = byId("install-error");
    var launcherSelect = byId("install-launcher");
    var path = byId("install-path").value.trim();
    var launcher = launcherSelect.value === "uvx"
      ? ["uvx", launcherSelect.getAttribute("data-uvx-spec")]
      : [path || "toolpin"];
    var result;
    try {
      if (path && launcherSelect.value !== "uvx" && !ABSOLUTE_COMMAND_RE.test(path)) {
        throw new InputError("toolpin's path must be absolute (`command -v toolpin` prints it)");
      }
      var argv = shSplit(byId("install-command").value);
      var nameField = byId("install-name");
      var name = nameField.value.trim() || defaultName(argv);
      nameField.setAttribute("placeholder", defaultName(argv));
      result = generate({
        argv: argv, name: name, env: splitList(byId("install-env").value), launcher: launcher
      });
    } catch (exc) {
      if (!(exc instanceof InputError)) {
        throw exc;
      }
      error.textContent = "Not generated: " + exc.message + ".";
      document.body.classList.add("install-invalid");
      return;
    }
    error.textContent = "";
    document.body.classList.remove("install-invalid");
    CLIENTS.forEach(function (client) {
      var code = byId("out-" + client);
      if (code) {
        code.textContent = result.outputs[client];
      }
      var link = byId("link-" + client);
      if (link) {
        link.setAttribute("href", result.outputs[client]);
      }
      var note = byId("note-" + client);
      if (note) {
        note.textContent = result.notes[client] || "";
      }
    });
  }

  function serverFromFragment() {
    /* Only a log id is read from the URL; a command (cmd=...) never is. */
    var target = byId("install-from-log");
    if (!target) {
      return;
    }
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    var id = params.get("server");
    if (id !== null && SERVER_ID_RE.test(id)) {
      var link = document.createElement("a");
      link.setAttribute("href", "../servers/" + id + ".html");
      link.textContent = "the page of server " + id;
      target.textContent = "This link names a server of the log. Its protected command is on ";
      target.appendChild(link);
      target.appendChild(document.createTextNode(", built from the verified log."));
      target.hidden = false;
    }
  }

  function wire() {
    var form = byId("install-form");
    if (!form) {
      return;
    }
    form.addEventListener("submit", function (event) { event.preventDefault(); render(); });
    ["install-command", "install-name", "install-env", "install-launcher", "install-path"]
      .forEach(function (id) {
      byId(id).addEventListener("input", render);
      byId(id).addEventListener("change", render);
    });
    serverFromFragment();
    render();
  }

  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    root.toolpinInstall = api;
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", wire);
    } else {
      wire();
    }
  }
})(this);
