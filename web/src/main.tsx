import { render } from "preact";
import { Api } from "./api";
import { App } from "./components/App";
import { loadConfig, Tokens } from "./config";
import "./styles.css";

async function start(root: HTMLElement) {
  try {
    const config = await loadConfig();
    const tokens = new Tokens(config);
    render(<App api={new Api(config.routerUrl, tokens)} tokens={tokens} />, root);
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
