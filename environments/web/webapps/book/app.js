// Room Booking: rooms, a week grid per room, a booking form and the user's bookings over /api/book.
const pages = {
  async rooms(main, s) {
    main.append(h('h1', {}, 'Meeting rooms'));
    const table = h('table', {id: 'rooms'}, h('tr', {}, h('th', {}, 'Room'), h('th', {}, 'Seats')));
    for (const r of s.rooms) {
      table.append(h('tr', {}, h('td', {}, h('a', {href: 'room.html?id=' + r.id, 'data-room': r.id}, r.name)),
                     h('td', {}, String(r.seats))));
    }
    main.append(table);
  },
  async room(main, s) {
    const room = s.rooms.find((r) => r.id === param('id'));
    if (!room) { main.append(h('h1', {}, 'No such room')); return; }
    main.append(h('h1', {id: 'room-name'}, room.name + ' (' + room.seats + ' seats)'));
    const grid = h('table', {id: 'grid'}, h('tr', {}, h('th', {}, ''), ...s.days.map((d) => h('th', {}, d))));
    for (const hour of s.hours) {
      const row = h('tr', {}, h('th', {}, hour + ':00'));
      for (const day of s.days) {
        const taken = s.bookings.find((b) => b.room === room.id && b.day === day && b.hour === hour);
        row.append(h('td', {}, taken ? h('span', {'data-taken': day + '-' + hour}, taken.mine ? taken.title : 'busy')
          : h('a', {href: `book.html?room=${room.id}&day=${day}&hour=${hour}`, 'data-slot': day + '-' + hour}, 'free')));
      }
      grid.append(row);
    }
    main.append(grid);
  },
  async book(main, s) {
    const room = s.rooms.find((r) => r.id === param('room'));
    const day = param('day'), hour = +param('hour');
    main.append(h('h1', {id: 'book-title'}, 'Book ' + (room ? room.name : '?') + ', ' + day + ' ' + hour + ':00'),
      h('label', {for: 'title'}, 'Meeting title'), h('input', {type: 'text', id: 'title'}),
      h('div', {class: 'row'}, h('button', {id: 'confirm', onclick: async () => {
        try {
          await api('book/book', {room: param('room'), day: day, hour: hour,
                                  title: document.getElementById('title').value});
          location.href = 'mine.html';
        } catch (e) { show('error', e.message); }
      }}, 'Confirm booking')));
  },
  async mine(main, s) {
    main.append(h('h1', {id: 'mine-title'}, 'My bookings'));
    const table = h('table', {id: 'mine'});
    for (const b of s.bookings.filter((b) => b.mine)) {
      const room = s.rooms.find((r) => r.id === b.room);
      table.append(h('tr', {}, h('td', {}, b.title), h('td', {}, room.name), h('td', {}, b.day + ' ' + b.hour + ':00'),
        h('td', {}, h('button', {'data-cancel': b.title, onclick: async () => {
          await api('book/cancel', {id: b.id}); location.reload(); }}, 'Cancel'))));
    }
    main.append(table);
  },
};
window.addEventListener('DOMContentLoaded', async () => {
  try { await pages[document.body.dataset.page](document.getElementById('main'), await api('book/state')); }
  catch (e) { show('error', e.message); }
  document.body.dataset.ready = '1';
});
