// Mailbox: inbox, message view (reply, forward, star, delete), compose and sent mail over /api/mail.
const pages = {
  async inbox(main, s) {
    main.append(h('h1', {}, 'Inbox (' + s.inbox.length + ')'));
    const table = h('table', {id: 'inbox'});
    for (const m of s.inbox) {
      table.append(h('tr', {}, h('td', {class: m.starred ? 'starred' : ''}, m.starred ? '★' : ''),
        h('td', {}, m.sender), h('td', {}, h('a', {href: 'message.html?id=' + m.id, 'data-message': m.id}, m.subject))));
    }
    main.append(table);
  },
  async message(main, s) {
    const m = s.inbox.find((m) => m.id === +param('id'));
    if (!m) { main.append(h('h1', {}, 'Message not found')); return; }
    main.append(h('h1', {id: 'subject'}, m.subject), h('div', {class: 'row'}, 'From: ' + m.sender),
      h('p', {id: 'body'}, m.body),
      h('div', {class: 'row'},
        h('a', {class: 'button', id: 'reply', href: 'compose.html?reply=' + m.id}, 'Reply'), ' ',
        h('a', {class: 'button', id: 'forward', href: 'compose.html?forward=' + m.id}, 'Forward'), ' ',
        h('button', {id: 'star', onclick: async () => { await api('mail/star', {id: m.id}); location.reload(); }},
          m.starred ? 'Unstar' : 'Star'), ' ',
        h('button', {id: 'delete', onclick: async () => {
          await api('mail/delete', {id: m.id}); location.href = 'index.html'; }}, 'Delete')),
      h('div', {class: 'note', id: 'state'}, m.starred ? 'Starred' : ''));
  },
  async compose(main, s) {
    const reply = s.inbox.find((m) => m.id === +param('reply'));
    const fwd = s.inbox.find((m) => m.id === +param('forward'));
    const to = reply ? reply.sender : '';
    const subject = reply ? 'Re: ' + reply.subject : fwd ? 'Fwd: ' + fwd.subject : '';
    const body = fwd ? '\n\n---- Forwarded message from ' + fwd.sender + ' ----\n' + fwd.body : '';
    main.append(h('h1', {}, 'New message'),
      h('label', {for: 'to'}, 'To (separate addresses with commas)'), h('input', {type: 'text', id: 'to', value: to}),
      h('label', {for: 'subject'}, 'Subject'), h('input', {type: 'text', id: 'subject', value: subject}),
      h('label', {for: 'body'}, 'Message'), h('textarea', {id: 'body'}, body),
      h('div', {class: 'row'}, h('button', {id: 'send', onclick: async () => {
        try {
          await api('mail/send', {to: document.getElementById('to').value,
            subject: document.getElementById('subject').value, body: document.getElementById('body').value});
          location.href = 'sent.html';
        } catch (e) { show('error', e.message); }
      }}, 'Send')));
  },
  async sent(main, s) {
    main.append(h('h1', {id: 'sent-title'}, 'Sent mail'));
    const table = h('table', {id: 'sent'});
    for (const m of s.sent) { table.append(h('tr', {}, h('td', {}, m.to.join(', ')), h('td', {}, m.subject))); }
    main.append(s.sent.length ? table : h('div', {}, 'Nothing sent yet.'));
  },
};
window.addEventListener('DOMContentLoaded', async () => {
  try { await pages[document.body.dataset.page](document.getElementById('main'), await api('mail/state')); }
  catch (e) { show('error', e.message); }
  document.body.dataset.ready = '1';
});
