import { render } from "preact";
import { Api } from "./api";
import { App } from "./components/App";
import { loadConfig, Tokens } from "./config";
import { LinkPolicy } from "./links";
import { Links } from "./markdown";
import "./styles.css";

async function start(root: HTMLElement) {
  try {
    const config = await loadConfig();
    const tokens = new Tokens(config);
    const api = new Api(config.routerUrl, tokens, undefined, config.timeouts);
    render(
      <Links.Provider value={new LinkPolicy(config.linkHosts)}>
        <App api={api} tokens={tokens} />
      </Links.Provider>,
      root,
    );
  } catch (e) {
    render(
      <main class="sign-in">
        <h1>The page is not set up</h1>
        <p role="alert">{e instanceof Error ? e.message : String(e)}</p>
        <p>It reads config.json beside index.html; see docs/web.md.</p>
      </main>,
      root,
    );
  }
}

void start(document.getElementById("app")!);
