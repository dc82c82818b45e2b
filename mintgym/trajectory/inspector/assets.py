"""The inspector's stylesheet and scripts (inlined in every page, so a page opens from disk or a server alike)."""

CSS = """
:root{--bad:#b00020;--good:#087f23;--warn:#a15c00;--line:#d8dbe0;--muted:#5f6670;--bg:#f6f7f9}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;background:var(--bg);color:#1d2126}
header.top{position:sticky;top:0;z-index:5;background:#1f2933;color:#fff;padding:8px 18px;display:flex;gap:14px;
 align-items:center;flex-wrap:wrap}
header.top a{color:#9fd3ff;text-decoration:none}header.top a:hover{text-decoration:underline}
header.top .here{font-weight:600}header.top .sep{color:#7b8794}
main{padding:14px 18px}
h1{font-size:20px;margin:4px 0 6px;word-break:break-all}h2{font-size:16px;margin:0}
.meta{color:var(--muted)}.meta b{color:#1d2126}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px;color:#fff}
.st-success{background:var(--good)}.st-failure{background:var(--bad)}.st-error{background:#6a1b9a}
.st-timeout{background:var(--warn)}.st-running{background:#546e7a}
.err{color:var(--bad);font-weight:600;white-space:pre-wrap}
.box{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:12px 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f1f3f5;padding:8px;border-radius:6px;margin:4px 0;
 max-height:420px;overflow:auto;font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre.code{background:#0f1720;color:#e6edf3}
table{border-collapse:collapse;background:#fff;width:100%}
td,th{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4;position:sticky;top:44px}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.why{color:var(--bad);max-width:480px;overflow-wrap:anywhere}
.filters{display:flex;gap:10px;flex-wrap:wrap;align-items:center;margin:10px 0}
.filters input[type=search]{min-width:260px;padding:4px 6px}
.counts span{margin-right:12px}
.stepbar{display:flex;flex-wrap:wrap;gap:4px;margin:8px 0}
.stepbar a{display:inline-block;min-width:28px;text-align:center;padding:2px 6px;border-radius:5px;
 background:#e3e8ee;color:#1d2126;text-decoration:none;font-size:12px}
.stepbar a.bad{background:#fbd5da}.stepbar a.rew{background:#c8ecd0}
section.step{scroll-margin-top:56px}
.stephead{display:flex;justify-content:space-between;gap:10px;align-items:baseline;flex-wrap:wrap}
.stephead .caption{font-family:ui-monospace,monospace;overflow-wrap:anywhere}
.pair{display:flex;gap:14px;flex-wrap:wrap;margin:8px 0}
figure{margin:0;flex:0 1 auto;min-width:0;max-width:calc(50% - 7px)}
figcaption{color:var(--muted);font-size:12px;margin-bottom:3px}
.frame{position:relative;max-width:100%;border:1px solid var(--line)}
.frame img{display:block;width:100%;height:auto}
img.pix{image-rendering:pixelated}
.frame svg{position:absolute;left:0;top:0;width:100%;height:100%;overflow:visible;pointer-events:none}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:10px}
.msg{border-left:4px solid #9aa5b1;padding:2px 0 2px 8px;margin:8px 0}
.msg.system{border-color:#7e57c2}.msg.user{border-color:#1e88e5}.msg.assistant{border-color:#43a047}
.role{font-weight:600;text-transform:uppercase;font-size:11px;color:var(--muted)}
.thumb{display:inline-block;margin:4px 8px 4px 0;vertical-align:top;font-size:12px;color:var(--muted)}
.thumb img{display:block;max-width:220px;max-height:160px;border:1px solid var(--line)}
.none{color:var(--muted);font-style:italic}
.facts span{margin-right:14px}
.side{display:grid;gap:12px}
.side .cell{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px;min-width:0}
.keys{color:#9aa5b1;font-size:12px}
"""

INDEX_JS = """
(function(){
  const rows=[...document.querySelectorAll('#episodes tbody tr')];
  const status=document.getElementById('f-status'), task=document.getElementById('f-task'),
        domain=document.getElementById('f-domain'), search=document.getElementById('f-search'),
        shown=document.getElementById('shown');
  function apply(){
    const s=status.value, t=task.value, d=domain.value, q=search.value.trim().toLowerCase();
    let n=0;
    for(const r of rows){
      const ok=(s==='all'||(s==='failed'?r.dataset.status!=='success':r.dataset.status===s))&&
               (t===''||r.dataset.task===t)&&(d===''||r.dataset.domain===d)&&(q===''||r.dataset.search.includes(q));
      r.hidden=!ok; if(ok) n++;
    }
    shown.textContent=n+' of '+rows.length+' shown';
    const qs=new URLSearchParams({status:s,task:t,domain:d,q:search.value});
    history.replaceState(null,'','#'+qs.toString());
  }
  const init=new URLSearchParams(location.hash.slice(1));
  if(init.get('status')) status.value=init.get('status');
  if(init.get('task')) task.value=init.get('task');
  if(init.get('domain')) domain.value=init.get('domain');
  if(init.get('q')) search.value=init.get('q');
  for(const el of [status,task,domain]) el.addEventListener('change',apply);
  search.addEventListener('input',apply);
  apply();
})();
"""

EPISODE_JS = """
(function(){
  const steps=[...document.querySelectorAll('section.step')];
  function current(){
    let best=0;
    steps.forEach((s,i)=>{ if(s.getBoundingClientRect().top<90) best=i; });
    return best;
  }
  function go(i){ if(i>=0&&i<steps.length){ location.hash=steps[i].id; } }
  document.addEventListener('keydown',e=>{
    if(e.target.closest('input,textarea,select')||e.ctrlKey||e.metaKey||e.altKey) return;
    if(e.key==='j'||e.key==='ArrowRight') go(current()+1);
    else if(e.key==='k'||e.key==='ArrowLeft') go(current()-1);
    else if(e.key==='n'||e.key==='p'){
      const a=document.getElementById(e.key==='n'?'next-episode':'prev-episode');
      if(a&&a.href) location.href=a.href;
    }
  });
})();
"""
