import { render } from "preact";
import { Api } from "./api";
import { App } from "./components/App";
import { loadConfig, Tokens } from "./config";
import { browserLang, textsFor } from "./i18n";
import { LinkPolicy } from "./links";
import { Links } from "./markdown";
import "./styles.css";

async function start(root: HTMLElement) {
  const lang = browserLang();
  const t = textsFor(lang);
  document.documentElement.lang = lang;
  document.title = t.appTitle;
  try {
    const config = await loadConfig();
    const tokens = new Tokens(config);
    const api = new Api(config.routerUrl, tokens, undefined, config.timeouts);
    render(
      <Links.Provider value={new LinkPolicy(config.linkHosts)}>
        <App api={api} tokens={tokens} lang={lang} />
      </Links.Provider>,
      root,
    );
  } catch (e) {
    render(
      <main class="sign-in">
        <h1>{t.pageNotSetUp}</h1>
        <p role="alert">{e instanceof Error ? e.message : String(e)}</p>
        <p>{t.pageConfig}</p>
      </main>,
      root,
    );
  }
}

void start(document.getElementById("app")!);
